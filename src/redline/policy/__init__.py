"""Climb policies: pure functions of a ladder that say what to boot next. No I/O here."""

from redline.policy.placement import Placement, place_boot
from redline.policy.route import next_step
from redline.policy.rungs import serve_config, smoke_workload

__all__ = ["Placement", "next_step", "place_boot", "serve_config", "smoke_workload"]
