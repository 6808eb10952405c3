"""The one metric table (each metric's direction and unit), the one sign convention, and what the noise model says of
a difference (METHODOLOGY.md, "One metric table, one sign").

    METRICS["median_tpot_ms"].direction      # "lower": lower is better
    change_words("median_tpot_ms", -49.78)   # "worse by 49.78%"

Every place that prints a change reads this table: the A/B's verdict, the baseline diff, the campaign's champion.
A change is always "better by X%" or "worse by X%" by the metric's direction, X relative to the baseline's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from redline.models.bench import Figure
from redline.models.strict import Strict

Direction = Literal["higher", "lower"]
Basis = Literal["trials", "measured", "earlier", "stated", "default"]
BandBasis = Literal["measured", "earlier", "stated", "default"]
Judged = Literal["better", "worse", "inside_noise", "untestable", "flagged"]
FlagRule = Literal["itl_below_tpot", "under_floor", "spread_over_mean"]
# The shortest time per output token any engine takes for one request, in ms: a TPOT or ITL under it is an artefact
# (the request's tokens reached the client together: a busy API server merges its stream), not a latency.
TOKEN_FLOOR_MS = 0.05


@dataclass(frozen=True)
class MetricInfo:
    """One metric: its name as the bench client (or redline, for the derived ones) writes it, which way is better,
    its unit."""

    name: str
    direction: Direction
    unit: str
    what: str


def _m(name: str, direction: Direction, unit: str, what: str) -> tuple[str, MetricInfo]:
    return name, MetricInfo(name=name, direction=direction, unit=unit, what=what)


# Per GPU: divided by tensor x pipeline x data parallel size. Per user: 1000 / median TPOT.
METRICS: dict[str, MetricInfo] = dict(
    [
        _m("output_throughput", "higher", "tok/s", "output tokens per second"),
        _m("output_throughput_per_gpu", "higher", "tok/s/GPU", "output tokens per second per GPU"),
        _m("total_token_throughput", "higher", "tok/s", "input and output tokens per second"),
        _m("request_throughput", "higher", "req/s", "requests completed per second"),
        _m("tokens_per_s_per_user", "higher", "tok/s", "the decode speed one request sees (1000 / median TPOT)"),
        _m("median_ttft_ms", "lower", "ms", "median time to first token"),
        _m("p99_ttft_ms", "lower", "ms", "99th percentile time to first token"),
        _m("median_tpot_ms", "lower", "ms", "median time per output token"),
        _m("p99_tpot_ms", "lower", "ms", "99th percentile time per output token"),
        _m("median_itl_ms", "lower", "ms", "median inter-token latency"),
        _m("p99_itl_ms", "lower", "ms", "99th percentile inter-token latency"),
        _m("sent_rate", "higher", "req/s", "requests per second the client sent (an open-loop bench)"),
        _m("goodput_requests", "higher", "req/s", "requests per second that met every per-request limit of the SLA"),
        _m("goodput_output_throughput", "higher", "tok/s", "output tokens per second of those requests"),
        _m("goodput_output_throughput_per_gpu", "higher", "tok/s/GPU", "the same, per GPU"),
    ]
)
DIRECTIONS: dict[str, Direction] = {name: m.direction for name, m in METRICS.items()}


def metric(name: str) -> MetricInfo:
    """The table's entry; a name it lacks is an error naming the ones it has."""
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"no metric {name!r}; metrics are {', '.join(METRICS)}") from None


def better_by_pct(baseline: float, current: float, direction: Direction) -> float:
    """How much better current is than baseline, in percent of the baseline (negative: worse). The one sign."""
    change = (current - baseline) / baseline * 100
    return (change if direction == "higher" else -change) + 0.0  # + 0.0: no "-0.00%"


def change_words(delta_pct: float | None, digits: int = 2) -> str:
    """'better by 12.00%', 'worse by 49.78%', 'no change', or 'not measured' (delta_pct from better_by_pct)."""
    if delta_pct is None:
        return "not measured"
    size = f"{abs(delta_pct):.{digits}f}%"
    if size == f"{0:.{digits}f}%":
        return "no change"
    return f"{'better' if delta_pct > 0 else 'worse'} by {size}"


MAX_VALUES = 1 << 16  # trials of one figure: past any real campaign or A/B
Values = Annotated[int, Field(ge=1, le=MAX_VALUES)]


class Stat(Strict):
    """One metric over a concurrency's trials: finite, non-negative, bounded (a measured figure)."""

    mean: Figure
    std: Figure | None = Field(None, description="sample std over trials; null with one trial")
    n: Values
    values: Annotated[list[Figure], Field(max_length=MAX_VALUES)]


class MetricFlag(Strict):
    """A figure too implausible to rest a claim on: named, never averaged into one."""

    metric: str
    rule: FlagRule = Field(
        description="itl_below_tpot: a trial's median ITL is under 1/100 of the median TPOT (an artefact of how the "
        "engine streams tokens); under_floor: a trial's TPOT or ITL is under the token floor (0.05 ms: its tokens "
        "reached the client together); spread_over_mean: the std over trials exceeds the mean"
    )
    where: str = Field(description="the arm, cell or side, and the concurrency")
    why: str


class Band(Strict):
    """A noise band given from outside the figures compared (policy/noise.py): measured between these very boots
    (a campaign's replicates, pooled), measured on earlier boots of the same model, engine, GPU and host (the
    workspace's noise.yml), stated (a campaign's noise_band_pct, a diff's tolerance) or METHODOLOGY.md's default,
    assumed. A measured one keeps its spread (cv) and degrees of freedom, so it is scaled to the boots compared."""

    pct: float = Field(description="the band for two single boots, in % of the baseline")
    basis: BandBasis
    source: str = Field(description="where it came from, in words")
    mde_pct: float | None = Field(None, description="its smallest detectable effect for two single boots")
    cv: float | None = Field(None, description="the boot-to-boot coefficient of variation it rests on (measured)")
    df: int | None = Field(None, description="the degrees of freedom of that spread (measured)")


class NoiseJudgement(Strict):
    """One difference as the noise model (policy/noise.py) judged it: on which basis, and the smallest effect it could
    have seen."""

    metric: str
    direction: Direction
    unit: str
    delta_pct: float | None = Field(description="better than the baseline by this much (negative: worse)")
    change: str = Field(description="the same, in words: 'better by 12.00%' / 'worse by 49.78%'")
    basis: Basis = Field(
        description="trials: Welch's t-test on both sides' trials; measured: a band from the spread between these "
        "boots; earlier: a band measured on earlier boots of the same model, engine, GPU and host; stated: the band "
        "the campaign or diff states; default: METHODOLOGY.md's 3%, assumed"
    )
    band_pct: float | None = Field(
        description="a difference at or inside this is noise (trials: the difference Welch's test would first call "
        "real at alpha)"
    )
    alpha: float
    p_value: float | None = Field(None, description="Welch's two-sided p (basis trials)")
    mde_pct: float | None = Field(
        description="the smallest effect this comparison could detect, in % of the baseline (alpha, 80% power; "
        "METHODOLOGY.md); at least the band"
    )
    n: tuple[int, int] = Field(description="trials behind (baseline, current)")
    outcome: Judged
    flags: list[MetricFlag] = []
    says: str = Field(description="the judgement in one line")


__all__ = [
    "DIRECTIONS",
    "MAX_VALUES",
    "METRICS",
    "Band",
    "BandBasis",
    "Basis",
    "Direction",
    "FlagRule",
    "TOKEN_FLOOR_MS",
    "Judged",
    "MetricFlag",
    "MetricInfo",
    "NoiseJudgement",
    "Stat",
    "Values",
    "better_by_pct",
    "change_words",
    "metric",
]
