"""redline: push a vLLM or SGLang deployment to its limits with measured evidence."""

__version__ = "0.1.0"
