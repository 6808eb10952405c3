"""A campaign's plan, as pure functions of its file: the cells, the base config, the gates, every command. No I/O.

    cells = expand_cells(campaign)                       # named cells, then the grid's
    plan = plan_campaign(campaign, base, executables)    # every command, after the methodology gates
    wanted = wanted_cells(campaign, base, cells)          # each cell as the prepare pipeline takes it

What the figures make of the cells (verdicts, the table, the champion) is in policy/champion.py.

The gates (METHODOLOGY.md, "Campaigns") are applied here and written into every
plan and verdict: at least 2 x c prompts per concurrency, max_num_seqs at least
the highest concurrency, a max_model_len that holds the workload, the regime of
every figure, the bench backend as the command names it. Each cell boots its own
engine (the campaign's unless it names another); cells of two engines are benched
by the one client and must match in prefix caching (policy/planned.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import product
from typing import Any, NamedTuple

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.errors import InputError
from redline.models import ServeConfig
from redline.models.campaign import LEVERS, Campaign, CellSpec, Verdict
from redline.models.campaign_plan import CampaignPlan, CellPlan, PlannedBench
from redline.models.context import regime_of
from redline.models.known_good import KnownGoodUse
from redline.models.ladder import Ladder
from redline.models.serve import flag_value
from redline.policy import known_good as kg
from redline.policy.planned import Made, Settled, Wanted, engines_of, settle
from redline.policy.rungs import serve_config
from redline.policy.workload import (
    Executables,
    PlannedCommands,
    boot_benches,
    commands_of,
    goodput_slo,
    length_gate,
    prompt_gates,
    seqs_gate,
)

_SHORT = {"max_num_batched_tokens": "mnbt", "max_num_seqs": "seqs", "kv_cache_dtype": "kv", "cudagraph_mode": "cg"}
_BOOL_NAMES = {
    "enforce_eager": ("eager", "graphs"),
    "enable_chunked_prefill": ("chunked", "nochunked"),
    "enable_prefix_caching": ("prefix", "noprefix"),
}


# ---- cells -----------------------------------------------------------------------------------------------


def _part(lever: str, value: Any, index: int) -> str:
    if lever == "engine":
        return str(value)
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


def cell_engine(campaign: Campaign, cell: CellSpec) -> str:
    """The engine a cell boots: its own, else the campaign's."""
    return cell.engine or campaign.engine


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
            raise InputError(
                f"{where}: the ladder has no recorded ceiling yet; finish its climb or give base.max_model_len"
            )
        _ladder_engine_matches(campaign, ladder, where)
        if model is not None and model != ladder.model.path:
            raise InputError(
                f"model: the campaign names {model!r} but {where} serves {ladder.model.path!r}; "
                "drop model: or make them match"
            )
        start = serve_config(ladder, ladder.ceiling.max_model_len, ladder.ceiling.max_num_batched_tokens).model_dump()
        model = ladder.model.path
    return ServeConfig.model_validate({**start, **knobs, "model": model})


def describe_base(campaign: Campaign, ladder: Ladder | None = None) -> str:
    """Where the base config comes from, in one line: the ladder's ceiling and the fixed knobs it boots with, and
    the knobs base gives over them (what base_config resolves)."""
    given = campaign.base.model_dump(exclude={"from_ladder"}, exclude_unset=True)
    own = ", ".join(f"{k} {v}" for k, v in given.items())
    if ladder is None or ladder.ceiling is None:
        return f"the knobs base gives ({own}); every other knob at its default"
    c = ladder.ceiling
    fixed = ", ".join(f"{k} {v}" for k, v in ladder.fixed.model_dump(exclude_defaults=True).items())
    return (
        f"base.from_ladder {campaign.base.from_ladder}: its ceiling (max_model_len {c.max_model_len}, "
        f"max_num_batched_tokens {c.max_num_batched_tokens}, rungs {', '.join(map(str, c.proven_by))}) with the "
        f"ladder's fixed knobs ({fixed or 'none changed'})" + (f"; the base's own knobs over it: {own}" if own else "")
    )


def _ladder_engine_matches(campaign: Campaign, ladder: Ladder, where: str) -> None:
    """A ladder's ceiling is one engine's: every cell it is the base of must boot that engine."""
    for cell in expand_cells(campaign):
        engine = cell_engine(campaign, cell)
        if engine == ladder.engine:
            continue
        if cell.engine is None:
            raise InputError(f"engine: the campaign runs {engine!r} but {where} was climbed on {ladder.engine!r}")
        raise InputError(
            f"cell {cell.name!r} runs {engine!r} but {where} was climbed on {ladder.engine!r}: a ceiling is one "
            f"engine's; give base.max_model_len instead of base.from_ladder, or run {engine!r} in a campaign of "
            "its own over its own ladder"
        )


class CellConfig(NamedTuple):
    """A cell's serve config as it boots, what the gates changed, and what the known-good entry did (None: none
    was looked up)."""

    config: ServeConfig
    notes: list[str]
    use: KnownGoodUse | None = None


def cell_config(campaign: Campaign, base: ServeConfig, cell: CellSpec, found: kg.Found | None = None) -> CellConfig:
    """The cell's serve config: the base and its levers (each knob either sets counts as set, whatever its value),
    then the known-good entry found (a knob they set wins), then the gates; InputError for what the gates refuse."""
    levers = _levers(cell)
    config = ServeConfig.model_validate({**base.model_dump(exclude_unset=True), **levers})
    config, use = kg.use_entry(config, found) if found is not None else (config, None)
    by_entry = use is not None and any(a.startswith("max_num_seqs ") for a in use.added)
    source = "the known-good entry" if by_entry else "base"
    own = "max_num_seqs" in levers
    top = [campaign.top_concurrency] if campaign.top_concurrency is not None else []
    config, notes = seqs_gate(config, top, "cell", cell.name, own=own, source=source)
    length_gate(campaign.shapes(), config.max_model_len, f"cell {cell.name!r}", "raise base.max_model_len")
    return CellConfig(config, [use.note, *notes] if use is not None and use.applied else notes, use)


def _levers(cell: CellSpec) -> dict[str, Any]:
    return {k: v for k, v in cell.set().items() if k in LEVERS}


# ---- the plan --------------------------------------------------------------------------------------------


def pinned_backend(campaign: Campaign, engine: Engine, bench_argv: Sequence[str]) -> str | None:
    """The backend the engine's bench command pins; InputError when the campaign asks another of its engine's cells.

    A cell of another engine is benched by the same client under the backend that names its engine (SGLang's:
    openai, in vLLM's client the same request function as vllm): it is recorded, not set against bench_backend.
    """
    backend = flag_value(bench_argv, "--backend")
    mine = engine.name == campaign.engine
    if mine and campaign.bench_backend is not None and campaign.bench_backend != backend:
        raise InputError(
            f"bench_backend: {engine.title}'s bench command pins --backend {backend}, not "
            f"{campaign.bench_backend!r}: set bench_backend: {backend} or leave it out"
        )
    return backend


def plan_cell(
    campaign: Campaign,
    cell: CellSpec,
    made: CellConfig,
    index: int,
    baseline: str,
    executables: Executables | None = None,
) -> CellPlan:
    """One cell's commands, all of its config as it boots (`made`, after the known-good entry and the gates), so
    its regime, boot and benches are what runs: its engine's boot, its engine's bench client's benches."""
    engine = get_engine(cell_engine(campaign, cell))
    config, notes = made.config, made.notes
    steps = boot_benches(campaign.loads(), campaign.warmup_requests, campaign.repeats, goodput_slo(campaign.sla))
    try:
        commands = commands_of(engine, config, steps, executables)
    except InputError as exc:  # a knob the engine refuses names the cell
        raise InputError(f"cell {cell.name!r} ({engine.name}): {exc}") from exc
    benches = _planned_benches(commands)
    return CellPlan(
        index=index,
        name=cell.name,
        baseline=cell.name == baseline,
        engine=engine.name,
        levers=_levers(cell),
        serve=config,
        regime=regime_of(config, campaign.warmup_requests),
        gates=[*prompt_gates(campaign.loads()), *notes],
        bench_backend=pinned_backend(campaign, engine, benches[0].command),
        boot_command=commands.boot,
        warmup_command=commands.warmup,
        benches=benches,
    )


def _boundary_gate(campaign: Campaign) -> list[str]:
    """What a plan says of the probes it cannot list: they are chosen during each boot."""
    spec = campaign.boundary
    if spec is None:
        return []
    limits = ", ".join(f"{m} <= {v:g}" for m, v in campaign.latency_sla.items())
    what, unit = ("request rate", " req/s") if spec.by == "rate" else ("concurrency", "")
    return [
        f"then each cell probes its load boundary ({limits}) on the same server: from {what} {spec.lowest:g}{unit} "
        f"doubling up to {spec.highest:g}{unit}, then bisecting to 5%, {spec.repeats} agreeing benches each; up to "
        f"{spec.most_benches} more benches per cell, chosen as it runs (each a listed bench's command at another "
        f"{what})"
    ]


def _planned_benches(commands: PlannedCommands) -> list[PlannedBench]:
    """The plan's benches: every one but the warm-up, with its command."""
    return [
        PlannedBench(
            concurrency=s.workload.concurrency,
            rate=s.workload.rate,
            speedup=s.workload.speedup,
            repeat=s.repeat,
            num_prompts=s.workload.num_prompts,
            result_file=s.result_name,
            command=argv,
        )
        for s, argv in commands.benches
    ]


def wanted_cells(
    campaign: Campaign, base: ServeConfig, specs: Sequence[CellSpec], executables: Executables | None = None
) -> list[Wanted[CellPlan]]:
    """Each cell as the prepare pipeline takes it (policy/planned.py): its config made from the base, its levers,
    the known-good entry found for its engine (a knob the cell set wins) and the gates, with its commands."""
    baseline = baseline_of(campaign, specs)

    def maker(spec: CellSpec, index: int) -> Callable[[kg.Found | None], Made[CellPlan]]:
        def make(found: kg.Found | None) -> Made[CellPlan]:
            made = cell_config(campaign, base, spec, found)
            return Made(plan_cell(campaign, spec, made, index, baseline, executables), made.use)

        return make

    return [Wanted(s.name, cell_engine(campaign, s), base.model, maker(s, i)) for i, s in enumerate(specs, 1)]


def plan_campaign(
    campaign: Campaign,
    base: ServeConfig,
    executables: Executables | None = None,
    *,
    path: str,
    done: dict[str, Verdict] | None = None,
    known_good: Mapping[str, kg.Found] | None = None,
) -> CampaignPlan:
    """Every cell's boot and bench commands in run order, after the known-good entry and the gates; refusals are
    InputErrors. The target's part (entries looked up there, the widening, the prediction) is the prepare
    pipeline's (ops/experiment/prepare.py), which assembles its plan as this does.

    executables: how the target runs each engine, by name (a cell's engine and its bench client's).
    known_good: the entry found for each engine's cells, or None (none looked up).
    """
    wanted = wanted_cells(campaign, base, expand_cells(campaign), executables)
    found = (lambda w: known_good.get(w.engine)) if known_good is not None else None
    return assemble(campaign, settle("cell", wanted, found, alike=False), path=path, done=done)


def assemble(
    campaign: Campaign, settled: Settled[CellPlan], *, path: str, done: Mapping[str, Verdict] | None = None
) -> CampaignPlan:
    """The campaign's plan of its cells as settled (each with its verdict, if done): the campaign-wide gates (the
    prompts, what the known-good entry did, the load boundary's probes), the bench client, the boots to do."""
    cells = [c.model_copy(update={"done": (done or {}).get(c.name)}) for c in settled.configs]
    said = list(dict.fromkeys(use.note for use in settled.uses.values() if kg.shown_in_gates(use)))
    backends = {c.bench_backend for c in cells}
    todo = [c for c in cells if c.done is None]
    return CampaignPlan(
        campaign=campaign.name,
        path=path,
        target=campaign.target,
        engine=campaign.engine,
        engines=engines_of([(c.name, c.engine, c.serve) for c in cells]),
        focus=campaign.focus,
        baseline=next(c.name for c in cells if c.baseline),
        concurrencies=campaign.concurrencies,
        bench_client=settled.client,
        bench_backend=backends.pop() if len(backends) == 1 else None,
        gates=[*prompt_gates(campaign.loads()), *said, *_boundary_gate(campaign)],
        cells=cells,
        boots=len(todo),
        benches=sum(len(c.benches) for c in todo),
        parallel=campaign.parallel,
    )
