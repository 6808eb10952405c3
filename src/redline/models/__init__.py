"""Pydantic shapes shared by every layer."""

from redline.models.bench import BenchResult, BenchWorkload
from redline.models.boot import BootSignals, BootStatus, BootTimings, MemoryBreakdown
from redline.models.ladder import (
    Ceiling,
    FixedKnobs,
    Floor,
    GpuProfile,
    Ladder,
    LadderStatus,
    ModelRef,
    NextStep,
    Rung,
    RungRow,
    SmokeTest,
    SmokeWorkload,
)
from redline.models.serve import ServeConfig, Widening, Widenings

__all__ = [
    "BenchResult",
    "BenchWorkload",
    "BootSignals",
    "BootStatus",
    "BootTimings",
    "MemoryBreakdown",
    "ServeConfig",
    "Widening",
    "Widenings",
]
__all__ += [
    "Ceiling",
    "FixedKnobs",
    "Floor",
    "GpuProfile",
    "Ladder",
    "LadderStatus",
    "ModelRef",
    "NextStep",
    "Rung",
    "RungRow",
    "SmokeTest",
    "SmokeWorkload",
]
