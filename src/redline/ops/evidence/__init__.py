"""The evidence behind a number: its context, baselines, known-good entries, speed-of-light."""
