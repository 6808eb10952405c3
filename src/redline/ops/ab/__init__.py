"""The A/B: its plan, its run, its result."""
