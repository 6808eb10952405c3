"""Several named workloads in one campaign: the spec's rules, the steps and files each cell runs, the table, and the
champion per workload and across them (combine: each, all, weights), as pure functions of recorded verdicts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from redline.models import ServeConfig
from redline.models.campaign_results import CellVerdict
from redline.models.context import Workload
from redline.ops.campaign.report import plots_of, render_markdown
from redline.ops.campaign.search import scores
from redline.policy import champion as figures
from redline.policy.campaign import plan_campaign
from redline.policy.workload import boot_benches
from redline.policy.workload_champion import select
from tests.campaign.helpers import campaign, verdict

SHAPES = {"chat": {"input_len": 128, "output_len": 16}, "long": {"input_len": 1024, "output_len": 64}}
NAMED = {"workload": None, "workloads": SHAPES}


def two(cell: str, chat: dict[int, float], long: dict[int, float], **kw: object) -> CellVerdict:
    """A cell benched on both workloads: chat's figures, then long's, each result naming its workload."""
    a, b = verdict(cell, chat, **kw), verdict(cell, long, **kw)  # type: ignore[arg-type]
    results = [r.model_copy(update={"workload": "chat"}) for r in a.results]
    results += [r.model_copy(update={"workload": "long"}) for r in b.results]
    shapes = {n: Workload(name=n, input_len=s["input_len"], output_len=s["output_len"]) for n, s in SHAPES.items()}
    return a.model_copy(
        update={
            "results": results,
            "workloads": shapes,
            "context": a.context.model_copy(update={"workload": Workload()}),
        }
    )


def pick(combine: object, cells: list[CellVerdict]):  # type: ignore[no-untyped-def]
    c = campaign(**NAMED, combine=combine)
    return select(c, [v.cell for v in cells], "base", {v.cell: v for v in cells})


CELLS = [
    two("base", {1: 50, 8: 100}, {1: 20, 8: 40}),
    two("a", {1: 55, 8: 110}, {1: 20, 8: 41}),  # chat +10%, long +2.5% (inside the band)
    two("b", {1: 52, 8: 105}, {1: 21, 8: 44}),  # chat +5%, long +10%
    two("c", {1: 50, 8: 90}, {1: 22, 8: 48}),  # chat -10%, long +20%
]


# ---- the spec ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"workloads": SHAPES}, "give workload: (one shape) or workloads: (several, each named), not both"),
        ({"workload": None}, "give workload: (one shape) or workloads: (several, each named), not both"),
        ({"combine": "all"}, "combine: it names a champion across workloads; give workloads: or drop combine"),
        ({**NAMED, "combine": {"weights": {"chat": 1, "lang": 2}}}, "combine.weights: give a weight for each"),
        ({**NAMED, "workloads": {"only": SHAPES["chat"]}}, "at least 2 items"),
        ({**NAMED, "workloads": {"Chat!": SHAPES["chat"], "long": SHAPES["long"]}}, "should match pattern"),
        ({**NAMED, "search": {"method": "model"}}, "search: climbs one answer across the workloads: set combine: all"),
        (
            {**NAMED, "focus": "goodput", "sla": {"p99_ttft_ms": 600}, "boundary": {"highest": 64}},
            "boundary: works on one workload",
        ),
    ],
)
def test_a_campaign_says_its_workloads_one_way_and_refuses_what_it_cannot_judge(changes: dict, said: str) -> None:
    with pytest.raises(ValidationError) as e:
        campaign(**changes)
    assert said in str(e.value)


def test_each_cell_benches_every_workload_at_every_concurrency_into_files_named_by_it() -> None:
    c = campaign(**NAMED, trials=2)
    steps = boot_benches(c.loads(), 2, c.repeats)
    warm, *benches = steps
    assert warm.warmup and (warm.workload.input_len, warm.workload.output_len) == (128, 16)  # the first workload's
    assert [s.result_name for s in benches] == [
        f"bench-{w}-c{n}-t{t}.json" for t in (1, 2) for w in ("chat", "long") for n in (1, 8)
    ]
    assert [(s.workload_name, s.workload.input_len) for s in benches[:4]] == [
        ("chat", 128),
        ("chat", 128),
        ("long", 1024),
        ("long", 1024),
    ]
    assert len({s.workload.seed for s in steps}) == len(steps)  # no bench replays another's prompts
    assert benches[2].label == "long, concurrency 1, repeat 1 of 2"


# A workload at its own concurrencies: long prompts at a low one, short ones at a high one (a scenario each).
OWN = {"chat": {**SHAPES["chat"], "concurrencies": [16, 4]}, "long": {**SHAPES["long"], "concurrencies": [2]}}


def test_a_workload_runs_at_its_own_concurrencies_and_the_experiment_s_are_every_one_of_them() -> None:
    c = campaign(workload=None, workloads=OWN, concurrencies=[])  # every workload gives its own: none at the top
    assert c.concurrencies == [2, 4, 16] and c.concurrencies_of("chat") == [4, 16] and c.concurrencies_of("long") == [2]
    warm, *benches = boot_benches(c.loads(), 2, c.repeats)
    assert [s.result_name for s in benches] == ["bench-chat-c4.json", "bench-chat-c16.json", "bench-long-c2.json"]
    assert warm.workload.concurrency == 2  # 2 warm-up requests, at most the highest concurrency (16)
    plan = plan_campaign(c, ServeConfig(model="m", max_model_len=4096), path="c.yml")
    assert plan.concurrencies == [2, 4, 16]
    assert [[b.result_file for b in cell.benches] for cell in plan.cells][0] == [s.result_name for s in benches]
    assert all(cell.serve.max_num_seqs == 16 for cell in plan.cells)  # the gate holds the highest of any workload
    mixed = campaign(workload=None, workloads={"chat": SHAPES["chat"], "long": OWN["long"]}, concurrencies=[1, 8])
    assert mixed.concurrencies_of("chat") == [1, 8] and mixed.concurrencies_of("long") == [2]


@pytest.mark.parametrize(
    ("workloads", "said"),
    [
        (
            {"chat": SHAPES["chat"], "long": OWN["long"]},
            "concurrencies: give the concurrencies every bench runs at, or",
        ),
        ({"chat": {**SHAPES["chat"], "concurrencies": [4, 4]}, "long": OWN["long"]}, "each concurrency once: [4, 4]"),
        ({"chat": {**SHAPES["chat"], "concurrencies": []}, "long": OWN["long"]}, "at least 1 item"),
    ],
)
def test_a_workload_without_concurrencies_anywhere_is_refused_naming_the_field(workloads: dict, said: str) -> None:
    with pytest.raises(ValidationError) as e:
        campaign(workload=None, workloads=workloads, concurrencies=[])
    assert said in str(e.value)


def test_a_latency_focus_ranks_a_workload_by_its_own_concurrencies_only() -> None:
    c = campaign(workload=None, workloads=OWN, concurrencies=[], focus="latency")
    both = [two(n, {4: t, 16: t}, {2: t}, metric="median_tpot_ms") for n, t in (("base", 10.0), ("a", 8.0))]
    cells = [
        v.model_copy(update={"results": [r for r in v.results if r.workload != "long" or r.concurrency == 2]})
        for v in both
    ]
    for v in cells:
        assert [(r.workload, r.concurrency) for r in v.results] == [("chat", 4), ("chat", 16), ("long", 2)]
    report = select(c, ["base", "a"], "base", {v.cell: v for v in cells})
    assert [(r.workload, [x.cell for x in r.ranked]) for r in report.workloads] == [
        ("chat", ["a", "base"]),
        ("long", ["a", "base"]),
    ]


def test_max_model_len_must_hold_the_longest_workload_and_the_refusal_names_it() -> None:
    c = campaign(**NAMED, base={"max_model_len": 1000})
    with pytest.raises(Exception, match="cannot hold the workload 'long': input_len 1,024 \\+ output_len 64 = 1,088"):
        plan_campaign(c, ServeConfig(model="m", max_model_len=1000), path="c.yml")


# ---- the table and the champions --------------------------------------------------------------------------------


def test_the_table_keeps_each_row_of_its_workload() -> None:
    table = figures.campaign_table(campaign(**NAMED), ["base", "a"], {v.cell: v for v in CELLS[:2]})
    assert [(r.cell, r.workload, r.concurrency, r.focus_value) for r in table.rows] == [
        ("base", "chat", 1, 50),
        ("base", "chat", 8, 100),
        ("base", "long", 1, 20),
        ("base", "long", 8, 40),
        ("a", "chat", 1, 55),
        ("a", "chat", 8, 110),
        ("a", "long", 1, 20),
        ("a", "long", 8, 41),
    ]


def test_each_workload_is_ranked_alone_and_agrees_with_a_campaign_of_that_workload_only() -> None:
    report = pick("each", CELLS)
    assert report.champion is None and report.outcome == "per_workload" and report.ranked == []
    chat, long = report.workloads
    assert (chat.workload, chat.champion, long.workload, long.champion) == ("chat", "a", "long", "c")
    assert "one champion per workload (chat: champion 'a'; long: champion 'c')" in report.note
    for w, shaped in (("chat", chat), ("long", long)):  # the same data as a one-workload campaign: the same verdict
        alone = campaign(workload=SHAPES[w])
        one = figures.select_champion(alone, [v.cell for v in CELLS], "base", {v.cell: _alone(v, w) for v in CELLS})
        assert [(c.cell, c.outcome, c.delta_pct) for c in shaped.ranked] == [
            (c.cell, c.outcome, c.delta_pct) for c in one.ranked
        ]
        assert shaped.champion == one.champion


def _alone(v: CellVerdict, w: str) -> CellVerdict:
    return v.model_copy(
        update={
            "results": [r.model_copy(update={"workload": None}) for r in v.results if r.workload == w],
            "workloads": {},
        }
    )


def test_all_crowns_only_a_win_on_every_workload_by_its_smallest_gain() -> None:
    report = pick("all", CELLS)
    assert report.champion == "b" and report.outcome == "improvement" and report.combine == "all"
    by = {c.cell: (c.outcome, c.delta_pct) for c in report.ranked}
    # c wins on long and loses on chat: mixed, as an A/B's arm would be (one combiner: policy/combine.py)
    assert by == {"b": ("win", 5.0), "a": ("no_improvement", 2.5), "base": ("baseline", None), "c": ("mixed", -10.0)}
    assert "chat +5.0% (win), long +10.0% (win): a win on every workload" in report.note
    without_b = pick("all", [v for v in CELLS if v.cell != "b"])
    assert without_b.champion is None and without_b.outcome == "no_improvement"


def test_weights_crown_the_best_weighted_gain_beyond_the_weighted_band() -> None:
    chat_heavy = pick({"weights": {"chat": 3, "long": 1}}, CELLS)
    assert chat_heavy.champion == "a"  # (3 x 10 + 2.5) / 4 = 8.1% against b's 6.25% and c's -2.5%
    by = {c.cell: (c.outcome, c.delta_pct, c.noise_band_pct) for c in chat_heavy.ranked}
    assert by["a"] == ("win", 8.125, 3.0) and by["c"] == ("no_improvement", -2.5, 3.0)
    long_heavy = pick({"weights": {"chat": 1, "long": 3}}, CELLS)
    assert long_heavy.champion == "c" and long_heavy.combine == "weights chat 1, long 3"  # (-10 + 60) / 4 = 12.5%


def test_a_cell_missing_a_workload_is_not_ranked_across_them() -> None:
    half = CELLS[1].model_copy(update={"results": [r for r in CELLS[1].results if r.workload == "chat"]})
    report = pick("all", [CELLS[0], half, CELLS[2]])
    a = next(c for c in report.ranked if c.cell == "a")
    assert a.outcome == "not_ranked" and a.why.startswith("not ranked on every workload: long:")
    assert report.champion == "b"


def test_a_red_baseline_blocks_every_workload_and_the_report_says_which() -> None:
    red = CELLS[0].model_copy(update={"verdict": "red", "reason": "boot failed"})
    report = pick("all", [red, *CELLS[1:]])
    assert report.champion is None and report.outcome == "no_baseline"
    assert report.note.startswith("workload chat: the baseline cell 'base' is red")


# ---- the plots and report.md --------------------------------------------------------------------------------------


def test_the_plots_draw_a_series_per_cell_and_workload_and_a_pareto_front_per_workload() -> None:
    extra = {"output_throughput": {1: 1.0, 8: 2.0}, "tokens_per_s_per_user": {1: 9.0, 8: 3.0}}
    cells = [
        two("base", {1: 50, 8: 100}, {1: 20, 8: 40}, extra=extra),
        two("a", {1: 55, 8: 110}, {1: 20, 8: 41}, extra=extra),
    ]
    c = campaign(**NAMED)
    table = figures.campaign_table(c, ["base", "a"], {v.cell: v for v in cells})
    report = select(c, ["base", "a"], "base", {v.cell: v for v in cells})
    plots = {p.name: p for p in plots_of(table, report)}
    assert sorted(plots) == ["pareto-chat", "pareto-long", "throughput", "tpot"]
    assert [s.label for s in plots["throughput"].series] == ["base on chat", "base on long", "a on chat", "a on long"]
    chat = plots["pareto-chat"]
    assert chat.file == "pareto-chat.png" and chat.title.endswith(", workload chat")
    assert {s.label: s.x for s in chat.series if s.label != "Pareto front"} == {"base": [50, 100], "a": [55, 110]}
    assert chat.marked is not None and chat.marked.label == "champion a (DRAFT)"  # chat's own champion
    long = plots["pareto-long"]
    assert long.marked is not None and long.marked.label == "baseline base (no improvement found)"
    text = render_markdown(c, table, report, list(plots.values()), {v.cell: v for v in cells})
    assert "| cell | workload | regime | c=1 | c=8 |" in text
    assert (
        "| a | chat | warm/graphs | 55.00 | 110.00 |" in text and "| a | long | warm/graphs | 20.00 | 41.00 |" in text
    )
    assert "### Workload chat: champion a" in text and "### Workload long: no improvement" in text
    assert "- workload chat: random, input 128 / output 16 tokens" in text
    assert "- workload long: random, input 1024 / output 64 tokens" in text


# ---- a spread of lengths and a shared prefix ----------------------------------------------------------------------


def test_a_spread_and_a_shared_prefix_reach_the_bench_command_the_length_gate_and_every_figure_s_context() -> None:
    shapes = {
        "chat": SHAPES["chat"],
        "rag": {"input_len": 512, "output_len": 64, "range_ratio": 0.5, "prefix_len": 1000},
    }
    c = campaign(workload=None, workloads=shapes, base={"max_model_len": 2000})
    with pytest.raises(
        Exception, match=r"workload 'rag': prefix_len 1,000 \+ input_len 512 x 1.5 \+ output_len 64 x 1.5 = 1,864"
    ):
        plan_campaign(c, ServeConfig(model="m", max_model_len=1800), path="c.yml")
    plan = plan_campaign(c, ServeConfig(model="m", max_model_len=2000), path="c.yml")
    rag = next(b.command for b in plan.cells[0].benches if b.result_file == "bench-rag-c1.json")
    chat = next(b.command for b in plan.cells[0].benches if b.result_file == "bench-chat-c1.json")
    assert rag[rag.index("--random-range-ratio") + 1] == "0.5" and rag[rag.index("--random-prefix-len") + 1] == "1000"
    assert "--random-range-ratio" not in chat and "--random-prefix-len" not in chat  # vLLM's defaults: none said
    shape = Workload.of(c.shape("rag"), "rag")
    assert (shape.range_ratio, shape.prefix_len, shape.concurrency) == (0.5, 1000, None)
    assert Workload.of(c.shape("chat"), "chat").prefix_len is None


def test_a_verdict_whose_result_names_a_workload_it_does_not_have_is_refused_naming_the_field() -> None:
    data = two("a", {1: 1.0}, {1: 1.0}).model_dump()
    data["results"][1]["workload"] = "lng"
    with pytest.raises(
        ValidationError, match=r"results\[1\].workload: 'lng' is not one of its workloads \(chat, long\)"
    ):
        CellVerdict.model_validate(data)


def test_under_each_every_workload_keeps_its_own_answer_even_where_one_has_nothing_to_rank() -> None:
    chat_only = [v.model_copy(update={"results": [r for r in v.results if r.workload == "chat"]}) for v in CELLS[1:]]
    report = pick("each", [CELLS[0], *chat_only])
    assert report.outcome == "per_workload" and report.champion is None
    assert [(r.workload, r.outcome, r.champion) for r in report.workloads] == [
        ("chat", "improvement", "a"),
        ("long", "no_improvement", None),
    ]
    assert "(chat: champion 'a'; long: no improvement)" in report.note


@pytest.mark.parametrize(
    ("combine", "expected"), [("all", {"a": 1.025, "b": 1.05, "c": 0.9}), ({"weights": {"chat": 3, "long": 1}}, None)]
)
def test_a_search_across_workloads_climbs_the_gain_the_champion_ranks_by(combine: object, expected: object) -> None:
    c = campaign(**NAMED, combine=combine, search={"method": "model"})
    verdicts = {v.cell: v for v in CELLS}
    report = select(c, list(verdicts), "base", verdicts)
    found = scores(report, verdicts)
    assert found["base"] == 1.0  # the baseline: no gain over itself
    for cell in report.ranked:  # the search's score and the champion's ranking are one figure
        if cell.cell != "base":
            assert found[cell.cell] == pytest.approx(1 + (cell.delta_pct or 0) / 100)
    if expected is not None:  # all: the smallest gain over the workloads (at the top concurrency, as ranked)
        assert {n: round(s or 0, 3) for n, s in found.items() if n != "base"} == expected
    best = max((n for n in found if found[n] is not None), key=lambda n: found[n] or 0)
    assert report.champion in (None, best)


def test_a_search_across_workloads_has_no_score_while_the_baseline_has_none_on_one() -> None:
    c = campaign(**NAMED, combine="all", search={"method": "model"})
    verdicts = {v.cell: v for v in CELLS[1:]}  # the baseline not booted yet
    assert scores(select(c, list(verdicts), "base", verdicts), verdicts) == dict.fromkeys(verdicts)


def test_a_cell_the_champion_holds_back_by_a_guard_has_no_score_so_the_search_s_best_is_the_champion() -> None:
    """The search scores off the champion's own report: the cell with the best throughput whose TPOT is three times
    the baseline's (RED) is mixed, never crowned, so it scores nothing, on one workload or across two."""
    tpot = {"median_tpot_ms": {1: 10.0, 8: 10.0}}
    slow = {"median_tpot_ms": {1: 30.0, 8: 30.0}}
    one = [verdict("base", {1: 50, 8: 100}, extra=tpot), verdict("a", {1: 55, 8: 110}, extra=tpot)]
    one.append(verdict("b", {1: 60, 8: 120}, extra=slow))
    both = [
        two("base", {1: 50, 8: 100}, {1: 20, 8: 40}, extra=tpot),
        two("a", {1: 55, 8: 110}, {1: 22, 8: 44}, extra=tpot),
    ]
    both.append(two("b", {1: 60, 8: 120}, {1: 24, 8: 48}, extra=slow))
    for c, cells in ((campaign(), one), (campaign(**NAMED, combine="all"), both)):
        verdicts = {v.cell: v for v in cells}
        report = select(c, list(verdicts), "base", verdicts)
        found = scores(report, verdicts)
        assert {r.cell: r.outcome for r in report.ranked}["b"] == "mixed" and found["b"] is None
        assert report.champion == "a" == max((n for n in found if found[n] is not None), key=lambda n: found[n] or 0)
