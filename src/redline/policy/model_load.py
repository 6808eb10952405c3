"""A boot's model load, judged: bytes and seconds from its log, its load format; a real load of a large model under
500 MB/s is a loud warning that names the faster ways to load, and dummy weights are said to prove nothing.

    signals = with_model_load(signals)   # each engine's parse_boot_log ends with it

The 500 MB/s bar is the field's: a several-hundred-GB model read single-stream over a FUSE mount takes most of an
hour, and at that rate the right move is to stop and load another way, not to wait.
"""

from __future__ import annotations

from redline.models.boot import BootSignals, ModelLoad

SLOW_MB_S = 500.0  # under this, a real load of a large model is flagged
LARGE_GIB = 10.0  # from here a model is large enough for its load rate to matter (an 8B model in bf16 is 15 GiB)
MB_PER_GIB = (1 << 30) / 1e6
FASTER = "a fast-loading endpoint, a parallel copy to local NVMe, --load-format runai_streamer, or tensorizer"
DUMMY = "dummy"


def judge(load_format: str | None, gib: float | None, seconds: float | None) -> ModelLoad | None:
    """The load a log describes; None when it says nothing of it."""
    if gib is None and seconds is None and load_format is None:
        return None
    dummy = load_format == DUMMY
    rate = gib * MB_PER_GIB / seconds if not dummy and gib is not None and seconds else None
    figures = f"{gib:.1f} GiB in {seconds:.1f} s" if gib is not None and seconds is not None else "not in the log"
    slow = rate is not None and gib is not None and gib >= LARGE_GIB and rate < SLOW_MB_S
    if dummy:
        note = f"dummy weights ({figures}): nothing was read, so this boot proves nothing about loading"
    elif slow:
        note = (
            f"slow model load: {figures} is {rate:,.0f} MB/s, under {SLOW_MB_S:.0f} MB/s: stop and load it "
            f"another way ({FASTER})"
        )
    else:
        note = f"model load: {figures}" + (f", {rate:,.0f} MB/s" if rate is not None else "")
    return ModelLoad(
        load_format=load_format,
        weights_gib=gib,
        seconds=seconds,
        mb_per_s=rate,
        proves_loading=not dummy,
        slow=slow,
        note=note,
    )


def with_model_load(signals: BootSignals) -> BootSignals:
    """The signals with their model load judged, and a slow load among the warnings."""
    load = judge(signals.load_format, signals.memory.weights_gib, signals.timings.model_load_s)
    warnings = signals.warnings + ([load.note] if load is not None and load.slow else [])
    return signals.model_copy(update={"model_load": load, "warnings": warnings})


__all__ = ["FASTER", "LARGE_GIB", "SLOW_MB_S", "judge", "with_model_load"]
