"""A boot's model load, judged: bytes and seconds from its log, its load format; a real load under 500 MB/s that is
large (10 GiB or more) or long (30 s or more) is a loud warning that names the faster ways to load, and dummy weights
are said to prove nothing.

    signals = with_model_load(signals)   # each engine's parse_boot_log ends with it: part of reading a boot log

The 500 MB/s bar is the field's: a several-hundred-GB model read single-stream over a FUSE mount takes most of an
hour, and at that rate the right move is to stop and load another way, not to wait. A model is slow to load by its
size (a large one at that rate takes minutes) or by the load's own seconds (a small one read slower still), and the
note says which bar it crossed, with the figures.
"""

from __future__ import annotations

from redline.models.boot import BootSignals, ModelLoad
from redline.models.serve import DUMMY

SLOW_MB_S = 500.0  # under this, a real load that is large or long is flagged
LARGE_GIB = 10.0  # from here a model is large enough for its load rate to matter (an 8B model in bf16 is 15 GiB)
SLOW_LOAD_S = 30.0  # from here waiting on a slow load costs more than switching to a faster way of loading
MB_PER_GIB = (1 << 30) / 1e6
FASTER = "a fast-loading endpoint, a parallel copy to local NVMe, --load-format runai_streamer, or tensorizer"


def _gib(gib: float) -> str:
    return f"{gib:.1f}" if gib >= 1 else f"{gib:.2f}"  # vLLM's CPU build prints a checkpoint's GiB to 2 places


def _s(seconds: float) -> str:
    return f"{seconds:.1f}" if seconds >= 1 else f"{seconds:.2f}"  # a load from the page cache takes hundredths


def _mb_s(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"


def bars_crossed(gib: float | None, seconds: float | None, rate: float | None) -> list[str]:
    """Which of the two bars a real load at `rate` MB/s crossed, each with its figures; none at SLOW_MB_S or over."""
    if rate is None or rate >= SLOW_MB_S:
        return []
    bars: list[str] = []
    if gib is not None and gib >= LARGE_GIB:
        bars.append(f"a large model ({_gib(gib)} GiB, {LARGE_GIB:.0f} GiB or more)")
    if seconds is not None and seconds >= SLOW_LOAD_S:
        bars.append(f"a long load ({seconds:.1f} s, {SLOW_LOAD_S:.0f} s or more)")
    return bars


def load_of(load_format: str | None, gib: float | None, seconds: float | None) -> ModelLoad | None:
    """The load a log describes; None when it says nothing of it."""
    if gib is None and seconds is None and load_format is None:
        return None
    dummy = load_format == DUMMY
    rate = gib * MB_PER_GIB / seconds if not dummy and gib is not None and seconds else None
    figures = f"{_gib(gib)} GiB in {_s(seconds)} s" if gib is not None and seconds is not None else "not in the log"
    bars = [] if dummy else bars_crossed(gib, seconds, rate)
    if dummy:
        note = f"dummy weights ({figures}): nothing was read, so this boot proves nothing about loading"
    elif bars and rate is not None:
        note = (
            f"slow model load: {figures} is {_mb_s(rate)} MB/s, under {SLOW_MB_S:.0f} MB/s, for "
            f"{' and '.join(bars)}: stop and load it another way ({FASTER})"
        )
    else:
        note = f"model load: {figures}" + (f", {_mb_s(rate)} MB/s" if rate is not None else "")
    return ModelLoad(
        load_format=load_format,
        weights_gib=gib,
        seconds=seconds,
        mb_per_s=rate,
        proves_loading=not dummy,
        slow=bool(bars),
        note=note,
    )


def with_model_load(signals: BootSignals, read_gib: float | None = None, read_s: float | None = None) -> BootSignals:
    """The signals with their model load judged, and a slow load among the warnings.

    `read_gib` and `read_s`: the checkpoint's size and the seconds its weights took to read, where the log says
    them (vLLM: "Checkpoint size", "Loading weights took"; its CPU build says only these); each is preferred to the
    weights' memory and the whole load's seconds, as what was read and how long reading it took.
    """
    gib = read_gib if read_gib is not None else signals.memory.weights_gib
    seconds = read_s if read_s is not None else signals.timings.model_load_s
    load = load_of(signals.load_format, gib, seconds)
    warnings = signals.warnings + ([load.note] if load is not None and load.slow else [])
    return signals.model_copy(update={"model_load": load, "warnings": warnings})


__all__ = ["FASTER", "LARGE_GIB", "SLOW_LOAD_S", "SLOW_MB_S", "bars_crossed", "load_of", "with_model_load"]
