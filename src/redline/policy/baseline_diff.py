"""A current result against a recorded baseline, as pure functions: GREEN, YELLOW or RED (METHODOLOGY.md,
"Baselines").

    GREEN   the focus metric is better beyond the noise, and no guarded metric is worse beyond it
    YELLOW  the focus metric is inside the noise (or flagged implausible) and nothing is worse beyond it; or
            the focus wins with a guarded metric worse beyond the noise but inside the second, looser band
    RED     the focus metric is worse beyond the noise; or a guarded metric is worse beyond the looser band;
            or a guarded one is worse beyond the noise without a focus win to pay for it

"Beyond the noise" is the one noise model's call (policy/noise.py), the same as the A/B's: Welch's test where both
sides have trials, else a band from the one recorded spread, else the tolerance (METHODOLOGY.md's 3% by default).
A metric flagged implausible (an ITL below TPOT / 100, a spread over the mean) is named and never decides a colour.

Points are matched by workload and concurrency; points whose contexts differ on a comparable field (model, GPU,
engine version, workload, regime, parallelism) are refused, every differing field named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from redline.errors import InputError
from redline.models.baseline import BaselineDiff, BaselinePoint, BaselineSource, Colour, MetricDiff, PointDiff
from redline.models.context import ContextDescriptor, differing_fields
from redline.models.load import Load, load_of
from redline.models.metrics import MetricFlag, better_by_pct, metric
from redline.policy.noise import DEFAULT_ALPHA, DEFAULT_BAND_PCT, Band, Sample, compare, flags_of, flags_on, stated_band

DEFAULT_TOLERANCE_PCT = DEFAULT_BAND_PCT  # METHODOLOGY.md's default noise band
DEFAULT_LOOSE_BAND_PCT = 10.0
DEFAULT_FOCUS = "output_throughput"
DEFAULT_GUARDED = ("output_throughput", "median_tpot_ms", "median_itl_ms", "median_ttft_ms")
COLOUR_RANK = {"GREEN": 0, "YELLOW": 1, "RED": 2}


def delta_pct(baseline: float, current: float, direction: str) -> float:
    """How much better current is than baseline, in percent (negative: worse): models/metrics.py's one sign."""
    return better_by_pct(baseline, current, "lower" if direction == "lower" else "higher")


def _point_flags(base: BaselinePoint, current: BaselinePoint, c: Load) -> list[MetricFlag]:
    """The implausible figures of either side at one concurrency."""
    found = []
    for side, p in (("baseline", base), ("current", current)):
        found += flags_of(f"{side} at {c.label}", {m: Sample.of_stat(s) for m, s in p.metrics.items()})
    return found


def classify(
    name: str,
    role: str,
    base: BaselinePoint,
    current: BaselinePoint,
    band: Band,
    loose: float,
    flags: Sequence[MetricFlag] = (),
    alpha: float = DEFAULT_ALPHA,
) -> MetricDiff:
    """One metric judged by the one noise model, with the tolerance as its band where no spread is recorded."""
    b, c = base.metrics.get(name), current.metrics.get(name)
    j = compare(
        name,
        Sample.of_stat(b),
        Sample.of_stat(c),
        alpha=alpha,
        band=band,
        flags=flags_on(name, flags),
        per=current.context.device,
    )
    found = {"metric": name, "role": role, "direction": j.direction, "baseline": b, "current": c}
    status = {"better": "improved", "inside_noise": "within", "untestable": "missing", "flagged": "flagged"}.get(
        j.outcome
    ) or ("regressed_loose" if abs(j.delta_pct or 0.0) <= loose else "regressed")
    return MetricDiff(**found, delta_pct=j.delta_pct, status=status, noise=j)


def colour_of(metrics: Sequence[MetricDiff]) -> tuple[Colour, str]:
    """The colour of one point, and why."""
    focus = next(m for m in metrics if m.role == "focus")
    guarded = [m for m in metrics if m.role == "guarded"]
    if focus.status == "missing":
        return "RED", f"the focus metric {focus.metric} is missing on one side"
    if focus.status == "flagged":
        return "YELLOW", f"no claim: {_says(focus)}"
    if focus.status in ("regressed", "regressed_loose"):
        return "RED", f"{_says(focus)}"
    hard = [m for m in guarded if m.status == "regressed"]
    soft = [m for m in guarded if m.status == "regressed_loose"]
    if hard:
        return "RED", f"guarded {_listed(hard)} beyond the looser band"
    if focus.status == "improved":
        if soft:
            return "YELLOW", f"{_says(focus)}; but guarded {_listed(soft)} beyond the noise, inside the looser band"
        return "GREEN", f"{_says(focus)}; no guarded metric worse beyond the noise"
    if soft:
        return "RED", f"guarded {_listed(soft)} beyond the noise, with no focus win to pay for it"
    return "YELLOW", f"no improvement: {_says(focus)}"


def _says(m: MetricDiff) -> str:
    return m.noise.says if m.noise is not None else f"{m.metric} {m.status}"


def _listed(metrics: Sequence[MetricDiff]) -> str:
    return ", ".join(f"{m.metric} {m.noise.change if m.noise else m.status}" for m in metrics)


def _flag_note(metrics: Sequence[MetricDiff]) -> str:
    flagged = [m.metric for m in metrics if m.status == "flagged" and m.role == "guarded"]
    return f" ({', '.join(flagged)} flagged implausible: not judged)" if flagged else ""


def _load(point: BaselinePoint) -> Load:
    """The load point a result point was measured at (its concurrency, rate or trace speedup), as its context says."""
    found = load_of(point.context.workload)
    if all(x is None for x in found):
        raise InputError("a result point has no concurrency in its context: record it with its workload's concurrency")
    return found


def _key(point: BaselinePoint, by_shape: bool = False) -> tuple[str, Load]:
    """What pairs two points: their workload's name (where the run benched several), or with `by_shape` the shape
    it sent, and their load point (a concurrency, a rate, a trace's speedup)."""
    w = point.context.workload
    if not by_shape:
        return w.name or "", _load(point)
    spread = f" +-{w.range_ratio:g}" if w.range_ratio else ""
    shared = f" prefix {w.prefix_len}" if w.prefix_len else ""
    trace = f" {w.trace}" if w.trace else ""
    return f"{w.dataset} {w.input_len}/{w.output_len}{spread}{shared}{trace}", _load(point)


def _where(key: tuple[str, Load]) -> str:
    return f"{key[0]} {key[1].label}" if key[0] else key[1].label


def _sorted(keys: Iterable[tuple[str, Load]]) -> list[tuple[str, Load]]:
    return sorted(keys, key=lambda k: (k[0], k[1].order))


def match_points(
    base: Sequence[BaselinePoint],
    current: Sequence[BaselinePoint],
) -> tuple[list[tuple[Load, BaselinePoint, BaselinePoint]], list[str]]:
    """Pairs by workload and concurrency, and the points only one side has; InputError when no pair is left. Where
    either side names no workload (one recorded before runs named them), the workloads pair by the shape each sent."""
    by_shape = len({bool(p.context.workload.name) for p in (*base, *current)}) > 1
    b = {_key(p, by_shape): p for p in base}
    c = {_key(p, by_shape): p for p in current}
    pairs = [(k[1], b[k], c[k]) for k in _sorted(set(b) & set(c))]
    unmatched = [f"{_where(k)}: only the baseline" for k in _sorted(set(b) - set(c))]
    unmatched += [f"{_where(k)}: only the current result" for k in _sorted(set(c) - set(b))]
    if not pairs:
        raise InputError(
            f"refused: no point in common (baseline {', '.join(map(_where, _sorted(b)))}; current "
            f"{', '.join(map(_where, _sorted(c)))}); measure the current result at the baseline's workloads and "
            "concurrencies"
        )
    return pairs, unmatched


def refuse_mismatch(pairs: Sequence[tuple[Load, BaselinePoint, BaselinePoint]]) -> None:
    """InputError listing every comparable field on which the contexts differ."""
    found = []
    for _, base, current in pairs:
        found += [f"{_where(_key(base))} {d}" for d in differing_fields(base.context, current.context)]
    if found:
        raise InputError(
            "refused: the contexts differ, so the numbers cannot be compared: "
            + "; ".join(found)
            + ". Diff against a baseline recorded in the same context, or record a new one"
        )


def _check_args(focus: str, guarded: Sequence[str], tolerance_pct: float, loose_band_pct: float) -> None:
    if loose_band_pct < tolerance_pct:
        raise InputError(
            f"loose_band_pct {loose_band_pct:g} is below tolerance_pct {tolerance_pct:g}: the looser "
            "band must be at least the tolerance"
        )
    for each in (focus, *guarded):
        try:
            metric(each)
        except ValueError as e:
            raise InputError(f"focus/guarded: {e}") from None


Noise = Mapping[str, Band]  # each metric's band, where one was measured or stated for it


def point_diff(
    c: Load,
    b: BaselinePoint,
    cur: BaselinePoint,
    focus: str,
    guards: Sequence[str],
    band: Band,
    loose: float,
    noise: Noise | None = None,
) -> PointDiff:
    """One concurrency: the focus and each guarded metric judged (each by its own band in `noise`, else `band`), the
    flags named, the colour."""
    flags = _point_flags(b, cur, c)
    bands = noise or {}
    metrics = [classify(focus, "focus", b, cur, bands.get(focus, band), loose, flags)]
    metrics += [classify(g, "guarded", b, cur, bands.get(g, band), loose, flags) for g in guards]
    colour, why = colour_of(metrics)
    return PointDiff(
        concurrency=c.concurrency,
        rate=c.rate,
        speedup=c.speedup,
        colour=colour,
        why=why + _flag_note(metrics),
        baseline_context=b.context,
        current_context=cur.context,
        metrics=metrics,
        baseline_sol=b.sol,
        current_sol=cur.sol,
        flags=flags,
    )


def compare_points(
    pairs: Sequence[tuple[Load, BaselinePoint, BaselinePoint]],
    focus: str,
    guards: Sequence[str],
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    loose_band_pct: float = DEFAULT_LOOSE_BAND_PCT,
    noise: Noise | None = None,
) -> list[PointDiff]:
    """The one comparison of two configs: every matched point, the focus and every guarded metric judged by the one
    noise model (each metric's band from `noise` where one was measured, else the tolerance), each point's colour.
    perf_baseline_diff, the A/B's verdict and guards, and champion_select all judge through it."""
    band = stated_band(tolerance_pct, f"the diff's tolerance_pct {tolerance_pct:g}%")
    return [point_diff(c, b, cur, focus, guards, band, loose_band_pct, noise) for c, b, cur in pairs]


def worst_of(points: Sequence[PointDiff]) -> tuple[PointDiff, str]:
    """The worst point (its colour is the comparison's) and the reason, where it is."""
    worst = max(points, key=lambda p: COLOUR_RANK[p.colour])
    name = worst.current_context.workload.name
    return worst, f"{worst.colour} at {_where((name or '', load_of(worst)))}: {worst.why}"


def diff(
    name: str,
    base: Sequence[BaselinePoint],
    current: Sequence[BaselinePoint],
    source: BaselineSource,
    *,
    focus: str = DEFAULT_FOCUS,
    guarded: Sequence[str] = DEFAULT_GUARDED,
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    loose_band_pct: float = DEFAULT_LOOSE_BAND_PCT,
    noise: Noise | None = None,
) -> BaselineDiff:
    """The current result against baseline `name`, point by point; the worst point's colour is the diff's. `noise`:
    each metric's band measured between the boots behind the figures (a campaign's), used before the tolerance."""
    _check_args(focus, guarded, tolerance_pct, loose_band_pct)
    pairs, unmatched = match_points(base, current)
    refuse_mismatch(pairs)
    guards = [g for g in guarded if g != focus]
    points = compare_points(pairs, focus, guards, tolerance_pct, loose_band_pct, noise)
    worst, reason = worst_of(points)
    result = BaselineDiff(
        baseline=name,
        current=source,
        colour=worst.colour,
        reason=reason,
        focus=focus,
        guarded=guards,
        tolerance_pct=tolerance_pct,
        loose_band_pct=loose_band_pct,
        points=points,
        unmatched=unmatched,
        text="",
    )
    return result.model_copy(update={"text": _text_of(result)})


# ---- the printed diff ----------------------------------------------------------------------------------------------


def context_line(ctx: ContextDescriptor) -> str:
    h, w, r = ctx.hardware, ctx.workload, ctx.regime
    gpu = f"{h.gpu_count} x {h.gpu_name}" if h.gpu_name else "no GPU"
    node = ctx.node.describe() if ctx.node else "node not recorded"
    return (
        f"{ctx.provenance}: {ctx.model.name} on {gpu}, {ctx.engine.name} {ctx.engine.version or '?'}, "
        f"TP{ctx.parallelism.tp}/DP{ctx.parallelism.dp}/PP{ctx.parallelism.pp}, kv {ctx.kv_cache_dtype}, "
        f"{w.dataset} {w.input_len}/{w.output_len} at {load_of(w).label} x {w.num_prompts} prompts, "
        f"{r.cache}/{r.graphs}, {ctx.trials} trials, {node}"
    )


def _stat(m: MetricDiff, which: str) -> str:
    s = m.baseline if which == "baseline" else m.current
    if s is None:
        return "-"
    return f"{s.mean:,.3f}" + (f" ± {s.std:,.3f}" if s.std is not None else "") + f" (n={s.n})"


def _sol(figure: object) -> str:
    pct = getattr(figure, "pct_of_ceiling", None)
    return f"{pct:.1f}% of SoL [{getattr(figure, 'key', None)}]" if pct is not None else "SoL: -"


def _text_of(d: BaselineDiff) -> str:
    lines = [
        d.reason,  # "GREEN at c=16: ..."
        f"focus {d.focus}; guarded {', '.join(d.guarded) or 'none'}; a difference is judged by the noise model "
        f"(Welch's t-test where both sides have trials, else a recorded spread, else the {d.tolerance_pct:g}% "
        f"tolerance); looser band {d.loose_band_pct:g}%; better/worse by each metric's direction",
    ]
    for p in d.points:
        lines += [
            "",
            f"{_where((p.baseline_context.workload.name or '', load_of(p)))}  {p.colour}: {p.why}",
            f"  baseline {d.baseline}: {context_line(p.baseline_context)}; {_sol(p.baseline_sol)}",
            f"  current  {d.current.describe()}: {context_line(p.current_context)}; {_sol(p.current_sol)}",
        ]
        for m in p.metrics:
            change = "-" if m.noise is None else m.noise.change
            basis = "" if m.noise is None else f"  [{m.noise.basis}]"
            lines.append(
                f"    {m.role:7} {m.metric:24} {_stat(m, 'baseline'):>30} -> {_stat(m, 'current'):>30}  "
                f"{change:>17}  {m.status}{basis}"
            )
        lines += [f"    flagged: {f.why}" for f in p.flags]
    if d.unmatched:
        lines += ["", "not compared: " + "; ".join(d.unmatched)]
    return "\n".join(lines)


__all__ = [
    "COLOUR_RANK",
    "DEFAULT_FOCUS",
    "DEFAULT_GUARDED",
    "DEFAULT_LOOSE_BAND_PCT",
    "DEFAULT_TOLERANCE_PCT",
    "classify",
    "Noise",
    "colour_of",
    "compare_points",
    "context_line",
    "diff",
    "match_points",
    "point_diff",
    "refuse_mismatch",
    "worst_of",
]
