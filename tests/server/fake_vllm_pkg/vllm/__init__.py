"""The fake engine (tests/server/fake_vllm.py) as a `vllm` package, for `python -m vllm` and for the resident bench
client, which imports `vllm.benchmarks.serve` once (ops/resident.py): put this folder on PYTHONPATH."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/server: fake_vllm.py

from fake_vllm import VERSION as __version__  # noqa: E402

__all__ = ["__version__"]
