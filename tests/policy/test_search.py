"""The search's decisions on replayed landscapes (pure): the real H200 grid, and made-up spaces whose best cell is
known, its stop rules, the feedback of cells that fail or cannot fit, and that the same record gives the same
proposal (what makes a search resume after a kill)."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import pytest

from redline.ledger.campaign_file import read_verdict, read_verdicts
from redline.models.search import SearchSpec
from redline.ops.campaign.plan import load_campaign
from redline.policy.ranking import cell_sample
from redline.policy.search import Candidate, Measured, Proposal, SearchStop, as_run, next_cell, propose

H200 = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-campaign" / "l8b-h200.yml"


def walk(
    cells: list[Candidate], truth: dict[str, float | None], spec: SearchSpec, band: float, **kw: object
) -> tuple[list[str], str]:
    """The search run to its stop against a known landscape: the cells it booted in order, and why it stopped."""
    measured: dict[str, Measured] = {}
    history: list[str] = []
    while True:
        step = propose(cells, cells[0].name, measured, history, spec, band=band, **kw)  # type: ignore[arg-type]
        if isinstance(step, SearchStop):
            return history, step.why
        assert step.cell not in measured, step
        measured[step.cell] = Measured(truth[step.cell], gpu_s=100.0)
        history.append(step.cell)


def grid(**levers: list[object]) -> list[Candidate]:
    names = list(levers)
    return [
        Candidate("-".join(f"{n}{v}" for n, v in zip(names, combo, strict=True)), dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*levers.values())
    ]


def h200() -> tuple[list[Candidate], dict[str, float | None]]:
    loaded = load_campaign(H200)
    verdicts = read_verdicts(loaded.results, loaded.names)
    cells = [Candidate(c.name, c.model_dump(exclude={"name"}, exclude_none=True)) for c in loaded.cells]
    return cells, {n: cell_sample(loaded.campaign, verdicts[n])[0].mean for n in loaded.names}  # type: ignore[union-attr]


def test_on_the_real_h200_grid_the_search_stops_at_half_the_boots_with_the_grid_s_answer() -> None:
    """The 2 x 3 grid's six cells lie within 1% of each other: the grid says "no improvement" over its baseline, and
    so does the search, from three boots (the baseline, the cell unlike it in both levers, then the one the model
    knows least about), by the gap rule."""
    cells, truth = h200()
    booted, why = walk(cells, truth, SearchSpec(), band=0.03)
    assert booted == ["mnbt8192-seqs128", "mnbt16384-seqs512", "mnbt8192-seqs512"]
    assert "no cell left is predicted" in why
    best = max(booted, key=lambda n: truth[n])  # type: ignore[arg-type,return-value]
    assert abs(truth[best] - max(truth.values())) / max(truth.values()) < 0.03  # type: ignore[operator,type-var,arg-type]


def test_a_clear_winner_in_the_far_corner_is_found_in_under_half_the_boots() -> None:
    cells = grid(a=[1, 2, 3, 4], b=[1, 2, 3])
    truth: dict[str, float | None] = {c.name: 100.0 + 10 * c.levers["a"] + 5 * c.levers["b"] for c in cells}  # type: ignore[operator]
    booted, why = walk(cells, truth, SearchSpec(), band=0.03)
    assert "a4-b3" in booted and len(booted) <= 6, (booted, why)


def test_a_best_at_a_middle_value_of_a_numeric_lever_is_found_within_four_boots_before_the_search_stops() -> None:
    """Throughput peaks at 4,096 batched tokens, the middle of five values. A trend prior (a slope through the ends,
    each value's own effect narrow about it) was sure after the ends that the middle lay between them: it booted
    the peak 7th, and its gap rule stopped it after 5 boots without it. Each value as uncertain as any other, the
    search boots it 4th, and its own rules let it."""
    cells = grid(mnbt=[1024, 2048, 4096, 8192, 16384], seqs=[64, 128, 256])
    for k, a in ((10.0, 2.7), (11.6, 2.6), (8.9, 2.1)):
        truth: dict[str, float | None] = {
            c.name: 100 - k * (math.log2(c.levers["mnbt"]) - 12) ** 2 + a * math.log2(c.levers["seqs"] / 64)  # type: ignore[operator,arg-type]
            for c in cells
        }
        booted, why = walk(cells, truth, SearchSpec(), band=0.03)
        assert booted.index("mnbt4096-seqs256") == 3, (booted, why)


def test_the_opening_spends_no_patience_so_a_best_behind_an_interaction_is_found_before_the_search_stops() -> None:
    """Twenty spaces of one family: eager costs, sync scheduling costs, fp8 KV helps with CUDA graphs and costs with
    eager (sizes drawn per space), so the opening's far cells are worse than the baseline, as an opening's often
    are. Counted against patience, they stopped the search after 4 or 5 boots, the best found in 8 of the 20; the
    model's own proposals count, and its rules let it find the best in 18 (7 or 8 boots of 24)."""
    found = 0
    for seed in range(20):
        rng = random.Random(seed)
        eager, sync, fp8, fp8_eager = rng.uniform(5, 15), rng.uniform(4, 12), rng.uniform(3, 8), rng.uniform(2, 6)
        cells = grid(eager=[False, True], sched=["async", "sync"], mnbt=[8192, 2048, 16384], kv=["auto", "fp8"])
        truth: dict[str, float | None] = {}
        for c in cells:
            lv = c.levers
            score = 100.0 - eager * (lv["eager"] is True) - sync * (lv["sched"] == "sync")
            score += (fp8 if lv["eager"] is False else -fp8_eager) * (lv["kv"] == "fp8")
            truth[c.name] = score + {2048: 1.0, 8192: 0.0, 16384: -2.0}[lv["mnbt"]]  # type: ignore[index]
        booted, _ = walk(cells, truth, SearchSpec(seed=seed), band=0.03)
        found += "eagerFalse-schedasync-mnbt2048-kvfp8" in booted
    assert found >= 17


def test_a_cell_the_memory_model_rules_out_is_never_booted_and_says_why_it_stopped() -> None:
    cells = grid(a=[1, 2, 3], b=[1, 2])
    truth: dict[str, float | None] = {c.name: float(c.levers["a"]) * 10 for c in cells}  # type: ignore[arg-type]
    booted, _ = walk(cells, truth, SearchSpec(initial=1), band=0.0, infeasible={"a3-b1": "x", "a3-b2": "y"})
    assert not {"a3-b1", "a3-b2"} & set(booted)


def test_a_lever_value_whose_every_boot_failed_counts_against_its_cells() -> None:
    cells = grid(a=[1, 2, 3], b=[1, 2, 3])
    truth: dict[str, float | None] = {c.name: None if c.levers["b"] == 3 else 100.0 + c.levers["a"] for c in cells}  # type: ignore[operator]
    booted, _ = walk(cells, truth, SearchSpec(initial=3, patience=2), band=0.0)
    failed = [n for n in booted if truth[n] is None]
    assert len(failed) == 1  # the opening's b=3 cell; the model never proposes another b=3 cell


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (SearchSpec(budget_boots=2), "the budget of 2 boots is spent"),
        (SearchSpec(budget_gpu_s=250), "the budget of 250 GPU-seconds is spent"),
        (SearchSpec(initial=1, patience=2), "2 cells in a row did not beat the best"),
    ],
)
def test_each_stop_rule_stops_and_says_so(spec: SearchSpec, said: str) -> None:
    cells = grid(a=[1, 2, 3, 4, 5, 6])
    truth: dict[str, float | None] = {c.name: 100.0 for c in cells}  # a flat space: nothing ever beats the first
    booted, why = walk(cells, truth, spec, band=0.0)
    assert said in why and len(booted) < len(cells)


def test_the_same_record_gives_the_same_proposal_so_a_search_resumes_where_it_was_killed() -> None:
    cells = grid(a=[1, 2, 3, 4], b=[1, 2, 3])
    truth = {c.name: 100.0 + 3 * c.levers["a"] - (c.levers["b"] - 2) ** 2 for c in cells}  # type: ignore[operator]
    measured = {n: Measured(truth[n]) for n in ("a1-b1", "a4-b1", "a1-b3")}
    first = propose(cells, "a1-b1", measured, list(measured), SearchSpec(seed=7), band=0.01)
    again = propose(cells, "a1-b1", dict(measured), list(measured), SearchSpec(seed=7), band=0.01)
    assert isinstance(first, Proposal) and first == again and first.cell not in measured
    assert first.estimate is not None and first.upper is not None and first.upper >= first.estimate


def test_a_cell_of_defaults_takes_the_levers_it_runs_with_where_other_cells_set_them() -> None:
    """A real graph-mode boot's serve config, with what a cell of defaults leaves unset: its KV cache dtype is auto
    (the engines' own), its eager mode the config's; its max_num_batched_tokens what the boot logged (8,192)."""
    graphs = read_verdict(H200.parent / "l8b-h200", "mnbt8192-seqs128")
    assert graphs is not None
    serve = graphs.context.serve.model_copy(update={"max_num_batched_tokens": None, "kv_cache_dtype": None})
    space = grid(max_num_batched_tokens=[2048, 16384], enforce_eager=[True, False], kv_cache_dtype=["auto", "fp8"])
    defaults = Candidate("defaults", {})
    assert as_run(defaults, serve, graphs.boot.signals, space).levers == {
        "enforce_eager": False,
        "kv_cache_dtype": "auto",
        "max_num_batched_tokens": 8192,
    }
    assert "max_num_batched_tokens" not in as_run(defaults, serve, None, space).levers  # not booted: not known yet
    only_tokens = grid(max_num_batched_tokens=[2048, 16384])  # no cell sets the others: nothing to learn them from
    assert as_run(defaults, serve, graphs.boot.signals, only_tokens).levers == {"max_num_batched_tokens": 8192}
    mine = Candidate("mine", {"max_num_batched_tokens": 2048})  # a lever the cell sets is its own
    assert as_run(mine, serve, graphs.boot.signals, only_tokens) == mine


def test_the_opening_boots_the_baseline_then_what_the_model_knows_least_about() -> None:
    """After a cell of defaults (run as 8,192 tokens in CUDA graphs), the opening spreads over every lever: the cell
    unlike it in every lever (eager, and 2,048 tokens: two doublings away, not one), then one unlike both booted in
    the tokens and the flag, then the values still seen once: a balanced design, not one lever at a time."""
    space = grid(enforce_eager=[True, False], max_num_batched_tokens=[2048, 16384], flags=["a", "b"])
    cells = [Candidate("defaults", {"enforce_eager": False, "max_num_batched_tokens": 8192}), *space]
    booted: list[str] = []
    measured: dict[str, Measured] = {}
    for _ in range(4):
        step = next_cell(cells, "defaults", measured, SearchSpec(initial=4), band=0.03)
        assert step is not None and step.why.startswith("an opening cell")
        booted.append(step.cell)
        measured[step.cell] = Measured(100.0)
    assert booted == [
        "defaults",
        "enforce_eagerTrue-max_num_batched_tokens2048-flagsa",
        "enforce_eagerTrue-max_num_batched_tokens16384-flagsb",
        "enforce_eagerFalse-max_num_batched_tokens2048-flagsb",
    ]
    step = next_cell(cells, "defaults", measured, SearchSpec(initial=4), band=0.03)
    assert step is not None and step.why.startswith("the highest upper bound")  # the model's, once 4 are booted
    infeasible = {"enforce_eagerTrue-max_num_batched_tokens2048-flagsa": "the cache holds too few tokens"}
    second = next_cell(cells, "defaults", {"defaults": Measured(1.0)}, SearchSpec(), band=0.03, infeasible=infeasible)
    assert second is not None and second.cell == "enforce_eagerTrue-max_num_batched_tokens2048-flagsb"
