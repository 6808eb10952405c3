"""A current result against a recorded baseline, as pure functions: GREEN, YELLOW or RED (METHODOLOGY.md,
"Baselines").

    GREEN   the focus metric improves beyond the tolerance, and no guarded metric regresses beyond it
    YELLOW  the focus metric is within the tolerance and nothing regresses beyond it; or the focus wins
            with a guarded regression inside the second, looser band
    RED     the focus metric regresses beyond the tolerance; or a guarded metric regresses beyond the looser
            band; or a guarded one regresses beyond the tolerance without a focus win to pay for it

Points are matched by concurrency; points whose contexts differ on a comparable field (model, GPU,
engine version, workload, regime, parallelism) are refused, every differing field named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline.errors import InputError
from redline.models.baseline import BaselineDiff, BaselinePoint, BaselineSource, Colour, MetricDiff, PointDiff
from redline.models.context import ContextDescriptor, differing_fields
from redline.policy.verdict_rules import DIRECTION

DEFAULT_TOLERANCE_PCT = 3.0  # METHODOLOGY.md's default noise band
DEFAULT_LOOSE_BAND_PCT = 10.0
DEFAULT_FOCUS = "output_throughput"
DEFAULT_GUARDED = ("output_throughput", "median_tpot_ms", "median_itl_ms", "median_ttft_ms")
_RANK = {"GREEN": 0, "YELLOW": 1, "RED": 2}


def delta_pct(baseline: float, current: float, direction: str) -> float:
    """How much better current is than baseline, in percent (negative: worse)."""
    change = (current - baseline) / baseline * 100
    return (change if direction == "higher" else -change) + 0.0  # + 0.0: no "-0.00%"


def classify(
    metric: str, role: str, base: BaselinePoint, current: BaselinePoint, tolerance: float, loose: float
) -> MetricDiff:
    direction: Any = DIRECTION.get(metric, "higher")
    b, c = base.metrics.get(metric), current.metrics.get(metric)
    found = {"metric": metric, "role": role, "direction": direction, "baseline": b, "current": c}
    if b is None or c is None or not b.mean:
        return MetricDiff(**found, delta_pct=None, status="missing")
    d = delta_pct(b.mean, c.mean, direction)
    status = (
        "improved"
        if d > tolerance
        else "within"
        if d >= -tolerance
        else "regressed_loose"
        if d >= -loose
        else "regressed"
    )
    return MetricDiff(**found, delta_pct=round(d, 4), status=status)


def colour_of(metrics: Sequence[MetricDiff]) -> tuple[Colour, str]:
    """The colour of one point, and why."""
    focus = next(m for m in metrics if m.role == "focus")
    guarded = [m for m in metrics if m.role == "guarded"]
    if focus.status == "missing":
        return "RED", f"the focus metric {focus.metric} is missing on one side"
    if focus.status in ("regressed", "regressed_loose"):
        return "RED", f"{focus.metric} regressed {focus.delta_pct:+.2f}%, beyond the tolerance"
    hard = [m for m in guarded if m.status == "regressed"]
    soft = [m for m in guarded if m.status == "regressed_loose"]
    if hard:
        return "RED", f"guarded {_listed(hard)} regressed beyond the looser band"
    if focus.status == "improved":
        if soft:
            return "YELLOW", (
                f"{focus.metric} improved {focus.delta_pct:+.2f}%, but guarded {_listed(soft)} "
                "regressed inside the looser band"
            )
        return "GREEN", f"{focus.metric} improved {focus.delta_pct:+.2f}% and no guarded metric regressed"
    if soft:
        return "RED", f"guarded {_listed(soft)} regressed beyond the tolerance, with no focus win to pay for it"
    return "YELLOW", f"{focus.metric} {focus.delta_pct:+.2f}% is within the tolerance (no improvement)"


def _listed(metrics: Sequence[MetricDiff]) -> str:
    return ", ".join(f"{m.metric} {m.delta_pct:+.2f}%" for m in metrics)


def _concurrency(point: BaselinePoint) -> int:
    c = point.context.workload.concurrency
    if c is None:
        raise InputError("a result point has no concurrency in its context: record it with its workload's concurrency")
    return c


def match_points(
    base: Sequence[BaselinePoint],
    current: Sequence[BaselinePoint],
) -> tuple[list[tuple[int, BaselinePoint, BaselinePoint]], list[str]]:
    """Pairs by concurrency, and the concurrencies only one side has; InputError when no pair is left."""
    b = {_concurrency(p): p for p in base}
    c = {_concurrency(p): p for p in current}
    pairs = [(k, b[k], c[k]) for k in sorted(set(b) & set(c))]
    unmatched = [f"c={k}: only the baseline" for k in sorted(set(b) - set(c))]
    unmatched += [f"c={k}: only the current result" for k in sorted(set(c) - set(b))]
    if not pairs:
        raise InputError(
            f"refused: no concurrency in common (baseline {sorted(b)}, current {sorted(c)}); "
            "measure the current result at the baseline's concurrencies"
        )
    return pairs, unmatched


def refuse_mismatch(pairs: Sequence[tuple[int, BaselinePoint, BaselinePoint]]) -> None:
    """InputError listing every comparable field on which the contexts differ."""
    found = []
    for c, base, current in pairs:
        found += [f"c={c} {d}" for d in differing_fields(base.context, current.context)]
    if found:
        raise InputError(
            "refused: the contexts differ, so the numbers cannot be compared: "
            + "; ".join(found)
            + ". Diff against a baseline recorded in the same context, or record a new one"
        )


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
) -> BaselineDiff:
    """The current result against baseline `name`, point by point; the worst point's colour is the diff's."""
    if loose_band_pct < tolerance_pct:
        raise InputError(
            f"loose_band_pct {loose_band_pct:g} is below tolerance_pct {tolerance_pct:g}: the looser "
            "band must be at least the tolerance"
        )
    pairs, unmatched = match_points(base, current)
    refuse_mismatch(pairs)
    guards = [g for g in guarded if g != focus]
    points = []
    for c, b, cur in pairs:
        metrics = [classify(focus, "focus", b, cur, tolerance_pct, loose_band_pct)]
        metrics += [classify(g, "guarded", b, cur, tolerance_pct, loose_band_pct) for g in guards]
        colour, why = colour_of(metrics)
        points.append(
            PointDiff(
                concurrency=c,
                colour=colour,
                why=why,
                baseline_context=b.context,
                current_context=cur.context,
                metrics=metrics,
                baseline_sol=b.sol,
                current_sol=cur.sol,
            )
        )
    worst = max(points, key=lambda p: _RANK[p.colour])
    reason = f"{worst.colour} at c={worst.concurrency}: {worst.why}"
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
    return result.model_copy(update={"text": render(result)})


# ---- the printed diff ----------------------------------------------------------------------------------------------


def context_line(ctx: ContextDescriptor) -> str:
    h, w, r = ctx.hardware, ctx.workload, ctx.regime
    gpu = f"{h.gpu_count} x {h.gpu_name}" if h.gpu_name else "no GPU"
    node = ctx.node.describe() if ctx.node else "node not recorded"
    return (
        f"{ctx.provenance}: {ctx.model.name} on {gpu}, {ctx.engine.name} {ctx.engine.version or '?'}, "
        f"TP{ctx.parallelism.tp}/DP{ctx.parallelism.dp}/PP{ctx.parallelism.pp}, kv {ctx.kv_cache_dtype}, "
        f"{w.dataset} {w.input_len}/{w.output_len} at c={w.concurrency} x {w.num_prompts} prompts, "
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


def render(d: BaselineDiff) -> str:
    lines = [
        d.reason,  # "GREEN at c=16: ..."
        f"focus {d.focus}; guarded {', '.join(d.guarded) or 'none'}; tolerance {d.tolerance_pct:g}%, "
        f"looser band {d.loose_band_pct:g}%",
    ]
    for p in d.points:
        lines += [
            "",
            f"c={p.concurrency}  {p.colour}: {p.why}",
            f"  baseline {d.baseline}: {context_line(p.baseline_context)}; {_sol(p.baseline_sol)}",
            f"  current  {d.current.describe()}: {context_line(p.current_context)}; {_sol(p.current_sol)}",
        ]
        for m in p.metrics:
            delta = "-" if m.delta_pct is None else f"{m.delta_pct:+.2f}%"
            lines.append(
                f"    {m.role:7} {m.metric:24} {_stat(m, 'baseline'):>30} -> {_stat(m, 'current'):>30}  "
                f"{delta:>9}  {m.status}"
            )
    if d.unmatched:
        lines += ["", "not compared: " + "; ".join(d.unmatched)]
    return "\n".join(lines)


__all__ = [
    "DEFAULT_FOCUS",
    "DEFAULT_GUARDED",
    "DEFAULT_LOOSE_BAND_PCT",
    "DEFAULT_TOLERANCE_PCT",
    "classify",
    "colour_of",
    "context_line",
    "diff",
    "match_points",
    "refuse_mismatch",
    "render",
]
