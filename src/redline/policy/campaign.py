"""Campaign decisions, as pure functions of a campaign file and its verdicts: no I/O here.

    cells = expand_cells(campaign)                       # named cells, then the grid's
    plan = plan_campaign(campaign, base, engine, exe)    # every command, after the methodology gates
    verdict, reason = judge(campaign, ...)               # green or red
    report = select_champion(campaign, cells, baseline, verdicts, top=3)

The gates (METHODOLOGY.md, "Campaigns") are applied here and written into every
plan and verdict: at least 2 x c prompts per concurrency, max_num_seqs at least
the highest concurrency, a max_model_len that holds the workload, the regime of
every figure, the bench backend as the command names it.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from itertools import product
from typing import Any

from redline.engines.base import Engine
from redline.errors import InputError
from redline.models import BenchResult, BenchWorkload, ServeConfig
from redline.models.campaign import (
    FOCUS_METRIC, GOODPUT_SLA, LEVERS, METRICS, BenchStep, Campaign, CampaignPlan, CampaignTable, CellPlan, CellSpec,
    CellVerdict, ChampionReport, ConcurrencyResult, RankedCell, Regime, RegimeGroup, SlaCheck, Stat, TableRow, Verdict,
)
from redline.models.ladder import Ladder
from redline.policy.route import serve_config

DEFAULT_NOISE_BAND_PCT = 3.0  # METHODOLOGY.md: below this a cell is "no improvement" when trials give no spread
TRIALS_BAND_SIGMAS = 2.0  # with trials: the band is this many coefficients of variation (the larger of the two)
PROMPTS_PER_CONCURRENCY = 4  # the default when the workload names no num_prompts
MIN_PROMPTS_PER_CONCURRENCY = 2  # one full batch beyond ramp and drain
RUN_DIR = "$RUN_DIR"  # where a bench writes, on the target: the server's run folder, known once it starts
DRAFT_NOTE = ("DRAFT: each cell is one boot on one node; confirm the champion with a same-node A/B of at least "
              "3 trials in a matched regime before calling it a VERDICT")

_SHORT = {"max_num_batched_tokens": "mnbt", "max_num_seqs": "seqs", "kv_cache_dtype": "kv", "cudagraph_mode": "cg"}
_BOOL_NAMES = {
    "enforce_eager": ("eager", "graphs"),
    "enable_chunked_prefill": ("chunked", "nochunked"),
    "enable_prefix_caching": ("prefix", "noprefix"),
}


# ---- cells -----------------------------------------------------------------------------------------------


def _part(lever: str, value: Any, index: int) -> str:
    if lever in _BOOL_NAMES:
        return _BOOL_NAMES[lever][0 if value else 1]
    if lever == "extra_flags":
        return f"flags{index}"
    return f"{_SHORT[lever]}{str(value).lower()}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-")[:64] or "cell"


def grid_cells(campaign: Campaign) -> list[CellSpec]:
    """Every combination of the grid's values, the first lever outermost, named by its values."""
    if campaign.grid is None or not campaign.grid.levers():
        return []
    levers = campaign.grid.levers()
    cells = []
    for combo in product(*(list(enumerate(values)) for values in levers.values())):
        chosen = {lever: value for lever, (_, value) in zip(levers, combo, strict=True)}
        name = "-".join(_part(lever, value, i) for lever, (i, value) in zip(levers, combo, strict=True))
        cells.append(CellSpec(name=_slug(name), **chosen))
    return cells


def expand_cells(campaign: Campaign) -> list[CellSpec]:
    """The named cells in their order, then the grid's; names must differ."""
    cells = [*campaign.cells, *grid_cells(campaign)]
    seen: set[str] = set()
    for cell in cells:
        if cell.name in seen:
            raise InputError(f"cells: two cells are named {cell.name!r} (a named cell and a grid cell?): rename one")
        seen.add(cell.name)
    return cells


def baseline_of(campaign: Campaign, cells: Sequence[CellSpec]) -> str:
    """The cell others are compared with: `baseline:` if set, else the first cell."""
    names = [c.name for c in cells]
    if campaign.baseline is None:
        return names[0]
    if campaign.baseline not in names:
        raise InputError(f"baseline: no cell is named {campaign.baseline!r}; the cells are {', '.join(names)}")
    return campaign.baseline


# ---- the base config and the gates ----------------------------------------------------------------------


def base_config(campaign: Campaign, ladder: Ladder | None = None) -> ServeConfig:
    """The base serve config: the knobs given, over the ceiling of `ladder` when base.from_ladder names one."""
    knobs = campaign.base.model_dump(exclude={"from_ladder"}, exclude_unset=True)
    start: dict[str, Any] = {}
    model = campaign.model
    if ladder is not None:
        where = f"base.from_ladder ({campaign.base.from_ladder})"
        if ladder.ceiling is None:
            raise InputError(f"{where}: the ladder has no recorded ceiling yet; finish its climb or give base.max_model_len")
        if ladder.engine != campaign.engine:
            raise InputError(f"engine: the campaign runs {campaign.engine!r} but {where} was climbed on {ladder.engine!r}")
        if model is not None and model != ladder.model.path:
            raise InputError(f"model: the campaign names {model!r} but {where} serves {ladder.model.path!r}; "
                             "drop model: or make them match")
        start = serve_config(ladder, ladder.ceiling.max_model_len, ladder.ceiling.max_num_batched_tokens).model_dump()
        model = ladder.model.path
    return ServeConfig.model_validate({**start, **knobs, "model": model})


def prompts_at(campaign: Campaign, c: int) -> tuple[int, str | None]:
    """How many prompts concurrency c sends, and the gate's note when it had to raise them."""
    asked = campaign.workload.num_prompts
    n = asked if asked is not None else PROMPTS_PER_CONCURRENCY * c
    floor = MIN_PROMPTS_PER_CONCURRENCY * c
    if n >= floor:
        return n, None
    return floor, (f"concurrency {c}: num_prompts {n} raised to {floor} (every concurrency sends at least 2 x c "
                   "prompts, so its window is not all ramp and drain)")


def prompt_gates(campaign: Campaign) -> list[str]:
    return [note for c in campaign.concurrencies if (note := prompts_at(campaign, c)[1])]


def regime_of(config: ServeConfig, warmup_requests: int) -> Regime:
    eager = config.enforce_eager or config.cudagraph_mode == "NONE"
    return Regime(cache="warm" if warmup_requests > 0 else "cold", graphs="eager" if eager else "graphs")


def cell_config(campaign: Campaign, base: ServeConfig, cell: CellSpec) -> tuple[ServeConfig, list[str]]:
    """The cell's serve config after the gates, and what they changed; InputError for what they refuse."""
    levers = _levers(cell)
    config = ServeConfig.model_validate({**base.model_dump(), **levers})
    config, notes = _seqs_gate(campaign, cell.name, config, "max_num_seqs" in levers)
    need = campaign.workload.input_len + campaign.workload.output_len
    if config.max_model_len < need:
        raise InputError(
            f"cell {cell.name!r}: max_model_len {config.max_model_len:,} cannot hold the workload's "
            f"input_len {campaign.workload.input_len:,} + output_len {campaign.workload.output_len:,} = {need:,} "
            "tokens: raise base.max_model_len or shorten the workload")
    return config, notes


def _levers(cell: CellSpec) -> dict[str, Any]:
    return {k: v for k, v in cell.set().items() if k in LEVERS}


def _seqs_gate(campaign: Campaign, name: str, config: ServeConfig, pinned: bool) -> tuple[ServeConfig, list[str]]:
    top = max(campaign.concurrencies)
    seqs = config.max_num_seqs
    if seqs is not None and seqs >= top:
        return config, []
    if pinned:
        raise InputError(
            f"cell {name!r}: max_num_seqs {seqs} (set by the cell) is below the highest concurrency {top}, so its "
            f"decode batch would be capped below the sweep: raise it, or drop the concurrencies above {seqs}")
    if seqs is None:
        note = (f"max_num_seqs was unset (the engine's default depends on the hardware): pinned to {top}, "
                "the highest concurrency")
    else:
        note = f"max_num_seqs {seqs} (from base) raised to {top}, the highest concurrency"
    return config.model_copy(update={"max_num_seqs": top}), [note]


# ---- the plan --------------------------------------------------------------------------------------------


def bench_file(c: int, trial: int, trials: int) -> str:
    return f"bench-c{c}.json" if trials == 1 else f"bench-c{c}-t{trial}.json"


def bench_order(campaign: Campaign) -> list[tuple[int, int]]:
    """(concurrency, trial) in the order a cell runs them: trials outermost, so they interleave."""
    return [(c, t) for t in range(1, campaign.trials + 1) for c in campaign.concurrencies]


def bench_workload(campaign: Campaign, c: int, step: int) -> BenchWorkload:
    """The workload of one bench; each bench on a server gets its own seed, so none replays an earlier one's
    prompts into the prefix cache (every cell runs the same seeds in the same order)."""
    w = campaign.workload
    return BenchWorkload(input_len=w.input_len, output_len=w.output_len, concurrency=c,
                         num_prompts=prompts_at(campaign, c)[0], seed=w.seed + 1 + step)


def warmup_workload(campaign: Campaign) -> BenchWorkload | None:
    n = campaign.warmup_requests
    if n == 0:
        return None
    w = campaign.workload
    return BenchWorkload(input_len=w.input_len, output_len=w.output_len, concurrency=min(n, max(campaign.concurrencies)),
                         num_prompts=n, seed=w.seed)


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of `flag` in argv (`--flag v` or `--flag=v`), as the command itself names it."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def pinned_backend(campaign: Campaign, engine: Engine, bench_argv: Sequence[str]) -> str | None:
    """The backend the engine's bench command pins; InputError when the campaign asks for another."""
    backend = flag_value(bench_argv, "--backend")
    if campaign.bench_backend is not None and campaign.bench_backend != backend:
        raise InputError(f"bench_backend: {engine.title}'s bench command pins --backend {backend}, not "
                         f"{campaign.bench_backend!r}: set bench_backend: {backend} or leave it out")
    return backend


def plan_cell(campaign: Campaign, base: ServeConfig, cell: CellSpec, index: int, baseline: str, engine: Engine,
              executable: Sequence[str] | None) -> CellPlan:
    config, notes = cell_config(campaign, base, cell)
    warm = warmup_workload(campaign)
    warmup = None if warm is None else engine.bench_argv(
        config, warm, result_dir=RUN_DIR, result_filename="warmup.json", executable=executable)
    benches = []
    for step, (c, t) in enumerate(bench_order(campaign)):
        name = bench_file(c, t, campaign.trials)
        argv = engine.bench_argv(config, bench_workload(campaign, c, step), result_dir=RUN_DIR,
                                 result_filename=name, executable=executable)
        benches.append(BenchStep(concurrency=c, trial=t, num_prompts=prompts_at(campaign, c)[0], result_file=name,
                                 command=argv))
    return CellPlan(index=index, name=cell.name, baseline=cell.name == baseline, levers=_levers(cell), serve=config,
                    regime=regime_of(config, campaign.warmup_requests), gates=[*prompt_gates(campaign), *notes],
                    boot_command=engine.serve_argv(config, executable), warmup_command=warmup, benches=benches)


def plan_campaign(campaign: Campaign, base: ServeConfig, engine: Engine, executable: Sequence[str] | None, *,
                  path: str, done: dict[str, Verdict] | None = None) -> CampaignPlan:
    """Every cell's boot and bench commands in run order, after the gates; refusals are InputErrors."""
    done = done or {}
    specs = expand_cells(campaign)
    baseline = baseline_of(campaign, specs)
    cells = [plan_cell(campaign, base, spec, i, baseline, engine, executable) for i, spec in enumerate(specs, 1)]
    cells = [cell.model_copy(update={"done": done.get(cell.name)}) for cell in cells]
    _refuse_twins(cells)
    backend = pinned_backend(campaign, engine, cells[0].benches[0].command)
    todo = [c for c in cells if c.done is None]
    return CampaignPlan(
        campaign=campaign.name, path=path, target=campaign.target, engine=campaign.engine, focus=campaign.focus,
        baseline=baseline, concurrencies=campaign.concurrencies, bench_backend=backend,
        gates=prompt_gates(campaign), cells=cells, boots=len(todo), benches=sum(len(c.benches) for c in todo),
    )


def _refuse_twins(cells: Sequence[CellPlan]) -> None:
    seen: dict[str, str] = {}
    for cell in cells:
        key = cell.serve.model_dump_json()
        if key in seen:
            raise InputError(f"cells: {seen[key]!r} and {cell.name!r} boot the same serve config (after the gates); "
                             "drop one, or make them differ")
        seen[key] = cell.name


# ---- figures and verdicts ----------------------------------------------------------------------------------


def gpus_of(config: ServeConfig) -> int:
    return config.tensor_parallel_size * config.pipeline_parallel_size * config.data_parallel_size


def metrics_of(result: BenchResult, config: ServeConfig) -> dict[str, float]:
    """The campaign metrics one bench result gives (derived ones included); absent ones are left out."""
    found = {name: float(v) for name in METRICS if isinstance(v := getattr(result, name, None), int | float)}
    if "output_throughput" in found:
        found["output_throughput_per_gpu"] = found["output_throughput"] / gpus_of(config)
    if found.get("median_tpot_ms"):
        found["tokens_per_s_per_user"] = 1000.0 / found["median_tpot_ms"]
    return found


def stat(values: Sequence[float]) -> Stat:
    std = statistics.stdev(values) if len(values) > 1 else None
    return Stat(mean=statistics.fmean(values), std=std, n=len(values), values=list(values))


def summarize(per_trial: Sequence[dict[str, float]]) -> dict[str, Stat]:
    """Each metric over the trials that gave it."""
    names = [m for m in METRICS if any(m in t for t in per_trial)]
    return {m: stat([t[m] for t in per_trial if m in t]) for m in names}


def sla_checks(metrics: dict[str, Stat], sla: dict[str, float]) -> list[SlaCheck]:
    checks = []
    for metric, limit in sla.items():
        value = metrics[metric].mean if metric in metrics else None
        kind = "max" if METRICS[metric] == "lower" else "min"
        ok = value is not None and (value <= limit if kind == "max" else value >= limit)
        checks.append(SlaCheck(metric=metric, limit=limit, kind=kind, value=value, ok=ok))
    return checks


def _breach(check: SlaCheck) -> str:
    if check.value is None:
        return f"{check.metric} was not measured"
    sign = ">" if check.kind == "max" else "<"
    return f"{check.metric} {check.value:.4g} {sign} {check.limit:g}"


def judge(campaign: Campaign, *, boot_ok: bool, boot_reason: str, warmup_error: str | None,
          results: Sequence[ConcurrencyResult]) -> tuple[Verdict, str]:
    """Green, or red with the first reason: a failed boot, a failed warm-up, failed requests, an SLA breach."""
    if not boot_ok:
        return "red", f"boot failed: {boot_reason}"
    if warmup_error is not None:
        return "red", f"warm-up failed: {warmup_error}"
    for result in results:
        if not result.ok:
            return "red", f"concurrency {result.concurrency}: {result.reason}"
    if campaign.focus == "goodput":
        if results and not any(r.sla_ok for r in results):
            return "red", "SLA: no concurrency stayed inside it (goodput needs at least one)"
        return "green", "every request completed; goodput is the best concurrency inside the SLA"
    for result in results:
        broken = [_breach(c) for c in result.sla if not c.ok]
        if broken:
            return "red", f"SLA at concurrency {result.concurrency}: {'; '.join(broken)}"
    return "green", "every request completed at every concurrency" + (" within the SLA" if campaign.sla else "")


# ---- the table -----------------------------------------------------------------------------------------------


def _mean(result: ConcurrencyResult, metric: str) -> float | None:
    return result.metrics[metric].mean if metric in result.metrics else None


def _failed(result: ConcurrencyResult) -> int | None:
    figures = [t.figures for t in result.trials if t.figures is not None]
    return sum(f.failed for f in figures) if figures else None


def table_rows(campaign: Campaign, verdict: CellVerdict) -> list[TableRow]:
    metric = FOCUS_METRIC[campaign.focus]
    rows = []
    for r in verdict.results:
        focus = r.metrics.get(metric)
        rows.append(TableRow(
            cell=verdict.cell, concurrency=r.concurrency, verdict=verdict.verdict, regime=verdict.context.regime.label,
            ok=r.ok, sla_ok=r.sla_ok, focus_value=focus.mean if focus else None, focus_std=focus.std if focus else None,
            output_throughput=_mean(r, "output_throughput"),
            output_throughput_per_gpu=_mean(r, "output_throughput_per_gpu"),
            tokens_per_s_per_user=_mean(r, "tokens_per_s_per_user"), median_ttft_ms=_mean(r, "median_ttft_ms"),
            p99_ttft_ms=_mean(r, "p99_ttft_ms"), median_tpot_ms=_mean(r, "median_tpot_ms"),
            median_itl_ms=_mean(r, "median_itl_ms"), failed=_failed(r), num_prompts=r.num_prompts,
        ))
    return rows


def campaign_table(campaign: Campaign, cells: Sequence[str], verdicts: dict[str, CellVerdict]) -> CampaignTable:
    """One row per cell and concurrency, in cell order; cells without a verdict are listed as missing."""
    metric = FOCUS_METRIC[campaign.focus]
    rows = [row for name in cells if name in verdicts for row in table_rows(campaign, verdicts[name])]
    return CampaignTable(campaign=campaign.name, focus=campaign.focus, focus_metric=metric,
                         direction=METRICS[metric], concurrencies=campaign.concurrencies, cells=list(cells),
                         missing=[c for c in cells if c not in verdicts], rows=rows)


# ---- the champion ----------------------------------------------------------------------------------------------

SCORING = {
    "throughput": "the highest mean output tokens/s per GPU over the concurrencies",
    "latency": "the geometric mean over the concurrencies of the mean median TPOT (ms)",
    "goodput": "the highest mean output tokens/s per GPU among the concurrencies inside the SLA",
}


def _cv(s: Stat) -> float | None:
    return s.std / s.mean if s.std is not None and s.mean else None


def cell_score(campaign: Campaign, verdict: CellVerdict) -> tuple[float | None, int | None, float | None]:
    """(score, the concurrency it came from, its coefficient of variation over trials) of a green cell."""
    metric = FOCUS_METRIC[campaign.focus]
    usable = [r for r in verdict.results if r.ok and metric in r.metrics]
    if campaign.focus == "goodput":
        usable = [r for r in usable if r.sla_ok]
    if not usable:
        return None, None, None
    if campaign.focus == "latency":
        if len(usable) != len(campaign.concurrencies):
            return None, None, None
        means = [r.metrics[metric].mean for r in usable]
        cvs = [cv for r in usable if (cv := _cv(r.metrics[metric])) is not None]
        return math.exp(statistics.fmean(math.log(m) for m in means)), None, max(cvs) if cvs else None
    best = max(usable, key=lambda r: r.metrics[metric].mean)
    return best.metrics[metric].mean, best.concurrency, _cv(best.metrics[metric])


def noise_band(campaign: Campaign, cv_cell: float | None, cv_base: float | None) -> tuple[float, str]:
    """The band below which a difference is noise, in percent, and where it came from."""
    if campaign.noise_band_pct is not None:
        return campaign.noise_band_pct, "campaign"
    if campaign.trials > 1 and cv_cell is not None and cv_base is not None:
        return TRIALS_BAND_SIGMAS * max(cv_cell, cv_base) * 100, "trials"
    return DEFAULT_NOISE_BAND_PCT, "default"


def _delta_pct(score: float, base: float, direction: str) -> float:
    change = (score - base) / base * 100
    return change if direction == "higher" else -change


def _rank(campaign: Campaign, name: str, verdict: CellVerdict, base: tuple[float | None, float | None] | None,
          baseline: str) -> RankedCell:
    score, at, cv = cell_score(campaign, verdict)
    regime = verdict.context.regime.label
    common = {"cell": name, "regime": regime, "score": score, "at_concurrency": at}
    if score is None:
        return RankedCell(**common, outcome="excluded", why="no figure of the focus metric to rank it by")
    if name == baseline:
        return RankedCell(**common, outcome="baseline", why="the cell the others are compared with")
    if base is None or base[0] is None:
        return RankedCell(**common, outcome="not_ranked", why="the baseline has no result to compare with")
    direction = METRICS[FOCUS_METRIC[campaign.focus]]
    delta = _delta_pct(score, base[0], direction)
    band, source = noise_band(campaign, cv, base[1])
    if abs(delta) <= band:
        outcome, why = "no_improvement", f"{delta:+.1f}% vs the baseline is inside the {band:.1f}% noise band"
    elif delta > 0:
        outcome, why = "win", f"{delta:+.1f}% vs the baseline, beyond the {band:.1f}% noise band"
    else:
        outcome, why = "worse", f"{delta:+.1f}% vs the baseline, beyond the {band:.1f}% noise band"
    return RankedCell(**common, delta_pct=round(delta, 3), noise_band_pct=round(band, 3), band_source=source,
                      outcome=outcome, why=why)


def _order(cells: Iterable[RankedCell], direction: str) -> list[RankedCell]:
    sign = -1 if direction == "higher" else 1
    return sorted(cells, key=lambda c: (c.score is None, sign * (c.score or 0.0)))


def select_champion(campaign: Campaign, cells: Sequence[str], baseline: str, verdicts: dict[str, CellVerdict], *,
                    top: int = 3) -> ChampionReport:
    """The champion: the best win over the baseline, in the baseline's regime, beyond the noise band. DRAFT."""
    metric = FOCUS_METRIC[campaign.focus]
    direction = METRICS[metric]
    base_v = verdicts.get(baseline)
    base_ok = base_v is not None and base_v.verdict == "green"
    base = None
    if base_ok:
        score, _, cv = cell_score(campaign, base_v)  # type: ignore[arg-type]
        base = (score, cv)
    base_regime = base_v.context.regime.label if base_v is not None else None
    excluded, groups = _exclusions(cells, verdicts), {}
    for name in cells:
        v = verdicts.get(name)
        if v is not None and v.verdict == "green":
            groups.setdefault(v.context.regime.label, []).append(_rank(campaign, name, v, base, baseline))
    ranked = _order(groups.pop(base_regime, []), direction) if base_regime else []
    others = [_other_group(regime, group, base_regime, direction) for regime, group in groups.items()]
    wins = [c for c in ranked if c.outcome == "win"]
    champion = wins[0].cell if wins else None
    outcome, note = _outcome(base_v, base_ok, ranked, champion, baseline)
    return ChampionReport(
        campaign=campaign.name, focus=campaign.focus, metric=metric, direction=direction,
        scoring=SCORING[campaign.focus], baseline=baseline, regime=base_regime, champion=champion, outcome=outcome,
        note=f"{note}. {DRAFT_NOTE}", ranked=ranked, top=[c.cell for c in ranked if c.score is not None][:top],
        other_regimes=others, excluded=excluded,
    )


def _exclusions(cells: Sequence[str], verdicts: dict[str, CellVerdict]) -> list[RankedCell]:
    out = []
    for name in cells:
        v = verdicts.get(name)
        if v is None:
            out.append(RankedCell(cell=name, regime="", score=None, outcome="excluded", why="no verdict yet"))
        elif v.verdict == "red":
            out.append(RankedCell(cell=name, regime=v.context.regime.label, score=None, outcome="excluded",
                                  why=f"red: {v.reason}"))
    return out


def _other_group(regime: str, group: list[RankedCell], base_regime: str | None, direction: str) -> RegimeGroup:
    why = f"regime {regime} differs from the baseline's {base_regime}: ranked only among themselves"
    cells = [c.model_copy(update={"outcome": "not_ranked", "why": why, "delta_pct": None, "noise_band_pct": None,
                                  "band_source": None}) for c in group]
    return RegimeGroup(regime=regime, cells=_order(cells, direction),
                       note=f"never ranked against the champion: {why}")


def _outcome(base_v: CellVerdict | None, base_ok: bool, ranked: list[RankedCell], champion: str | None,
             baseline: str) -> tuple[Any, str]:
    if base_v is None:
        return "no_baseline", f"the baseline cell {baseline!r} has no verdict yet: run the campaign first"
    if not base_ok:
        return "no_baseline", (f"the baseline cell {baseline!r} is red ({base_v.reason}): no cell can be called "
                               "an improvement until it is green")
    if champion is None:
        if not any(c.outcome != "baseline" for c in ranked):
            return "no_results", "no other green cell in the baseline's regime to compare"
        return "no_improvement", "no improvement: no cell beat the baseline by more than the noise band"
    win = next(c for c in ranked if c.cell == champion)
    return "improvement", f"champion {champion!r}: {win.why}"


# ---- plots ----------------------------------------------------------------------------------------------------


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (both higher-is-better), by x descending."""
    front: list[tuple[float, float]] = []
    best_y = -math.inf
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best_y:
            front.append((x, y))
            best_y = y
    return front
