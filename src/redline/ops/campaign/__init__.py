"""Campaigns: the plan, the run, the verdicts, the champion and the report."""
