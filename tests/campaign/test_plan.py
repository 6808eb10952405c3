"""Grid expansion and every plan-time methodology gate, as pure functions of a campaign."""

from __future__ import annotations

import pytest

from redline.engines import get_engine
from redline.errors import InputError
from redline.models import ServeConfig
from redline.models.serve import flag_value
from redline.policy import campaign as policy
from tests.campaign.helpers import campaign

ENGINE = get_engine()


def plan(c, base: ServeConfig | None = None):  # type: ignore[no-untyped-def]
    return policy.plan_campaign(c, base or policy.base_config(c), path="c.yml")


# ---- the grid --------------------------------------------------------------------------------------------------------


def test_the_grid_is_every_combination_first_lever_outermost() -> None:
    c = campaign(grid={"max_num_batched_tokens": [2048, 8192], "max_num_seqs": [16, 32, 64]}, concurrencies=[1, 16])
    names = [cell.name for cell in policy.expand_cells(c)]
    assert names == [
        "mnbt2048-seqs16",
        "mnbt2048-seqs32",
        "mnbt2048-seqs64",
        "mnbt8192-seqs16",
        "mnbt8192-seqs32",
        "mnbt8192-seqs64",
    ]
    cells = plan(c).cells
    assert [(x.serve.max_num_batched_tokens, x.serve.max_num_seqs) for x in cells] == [
        (2048, 16),
        (2048, 32),
        (2048, 64),
        (8192, 16),
        (8192, 32),
        (8192, 64),
    ]
    assert [x.baseline for x in cells] == [True] + [False] * 5  # the first cell is the baseline


def test_named_cells_come_first_and_baseline_can_name_any_cell() -> None:
    c = campaign(cells=[{"name": "prod", "max_num_batched_tokens": 4096}], baseline="mnbt8192")
    p = plan(c)
    assert [x.name for x in p.cells] == ["prod", "mnbt2048", "mnbt8192"]
    assert p.baseline == "mnbt8192" and [x.name for x in p.cells if x.baseline] == ["mnbt8192"]


def test_boolean_levers_and_flags_get_readable_names() -> None:
    c = campaign(
        grid={
            "enforce_eager": [True, False],
            "enable_prefix_caching": [False],
            "kv_cache_dtype": ["auto", "fp8"],
            "extra_flags": [[], ["--async-scheduling"]],
        }
    )
    names = [cell.name for cell in policy.expand_cells(c)]
    # levers combine in their fixed order (LEVERS), whatever the file's key order; values in the file's order
    assert names[0] == "kvauto-eager-noprefix-flags0" and names[-1] == "kvfp8-graphs-noprefix-flags1"
    last = plan(c).cells[-1]
    assert last.serve.extra_flags == ["--async-scheduling"] and last.levers["kv_cache_dtype"] == "fp8"


def test_a_cell_keeps_every_knob_it_does_not_set() -> None:
    c = campaign(base={"max_model_len": 4096, "gpu_memory_utilization": 0.8, "load_format": "dummy", "port": 8123})
    for cell in plan(c).cells:
        assert (cell.serve.gpu_memory_utilization, cell.serve.load_format, cell.serve.port) == (0.8, "dummy", 8123)


def test_two_cells_that_boot_the_same_config_are_refused() -> None:
    c = campaign(cells=[{"name": "a", "max_num_batched_tokens": 2048}])
    with pytest.raises(InputError, match="cells 'a' and 'mnbt2048' boot the same serve config"):
        plan(c)


# ---- gate: at least 2 x c prompts ------------------------------------------------------------------------------------


def test_prompts_default_to_four_per_concurrency() -> None:
    benches = plan(campaign()).cells[0].benches
    assert [(b.concurrency, b.num_prompts) for b in benches] == [(1, 4), (8, 32)]


def test_too_few_prompts_are_raised_to_two_per_concurrency_and_the_plan_says_so() -> None:
    c = campaign(workload={"input_len": 128, "output_len": 16, "num_prompts": 10}, concurrencies=[1, 4, 16])
    p = plan(c)
    assert [(b.concurrency, b.num_prompts) for b in p.cells[0].benches] == [(1, 10), (4, 10), (16, 32)]
    assert p.gates == [
        "concurrency 16: num_prompts 10 raised to 32 (every concurrency sends at least 2 x c prompts, "
        "so its window is not all ramp and drain)"
    ]
    assert p.gates[0] in p.cells[0].gates and p.gates[0] in p.cells[1].gates
    assert "--num-prompts" in (argv := p.cells[0].benches[2].command) and argv[argv.index("--num-prompts") + 1] == "32"


# ---- gate: max_num_seqs >= the highest concurrency -------------------------------------------------------------------


def test_unset_max_num_seqs_is_pinned_to_the_highest_concurrency() -> None:
    cell = plan(campaign(concurrencies=[1, 64])).cells[0]
    assert cell.serve.max_num_seqs == 64
    assert any("max_num_seqs was unset" in g and "pinned to 64" in g for g in cell.gates)
    assert cell.boot_command[cell.boot_command.index("--max-num-seqs") + 1] == "64"


def test_a_base_max_num_seqs_below_the_top_concurrency_is_raised() -> None:
    cell = plan(campaign(base={"max_model_len": 4096, "max_num_seqs": 16}, concurrencies=[1, 64])).cells[0]
    assert cell.serve.max_num_seqs == 64
    assert "max_num_seqs 16 (from base) raised to 64, the highest concurrency" in cell.gates


def test_a_cell_that_pins_max_num_seqs_below_the_top_concurrency_is_refused() -> None:
    c = campaign(grid={"max_num_seqs": [32, 128]}, concurrencies=[8, 64])
    with pytest.raises(InputError) as exc:
        plan(c)
    text = str(exc.value)
    assert "cell 'seqs32': max_num_seqs 32 (set by the cell) is below the highest concurrency 64" in text
    assert "drop the concurrencies above 32" in text


def test_a_max_num_seqs_at_or_above_the_top_is_left_alone() -> None:
    cell = plan(campaign(base={"max_model_len": 4096, "max_num_seqs": 256}, concurrencies=[1, 64])).cells[0]
    assert cell.serve.max_num_seqs == 256 and not any("max_num_seqs" in g for g in cell.gates)


# ---- gate: the serve config holds the workload -----------------------------------------------------------------------


def test_a_max_model_len_that_cannot_hold_the_workload_is_refused_with_the_numbers() -> None:
    c = campaign(base={"max_model_len": 1024}, workload={"input_len": 1000, "output_len": 128})
    with pytest.raises(InputError) as exc:
        plan(c)
    assert (
        "cell 'mnbt2048': max_model_len 1,024 cannot hold the workload: input_len 1,000 + output_len 128 = 1,128 tokens"
    ) in str(exc.value)


def test_a_workload_that_just_fits_is_planned() -> None:
    assert plan(campaign(base={"max_model_len": 1128}, workload={"input_len": 1000, "output_len": 128})).cells


# ---- gate: regimes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("levers", "warmup", "label"),
    [
        ({}, 8, "warm/graphs"),
        ({}, 0, "cold/graphs"),
        ({"enforce_eager": True}, 8, "warm/eager"),
        ({"cudagraph_mode": "NONE"}, 8, "warm/eager"),
        ({"cudagraph_mode": "PIECEWISE"}, 0, "cold/graphs"),
    ],
)
def test_every_cell_is_labelled_with_its_regime(levers: dict, warmup: int, label: str) -> None:
    c = campaign(grid=None, cells=[{"name": "x", **levers}], warmup_requests=warmup)
    cell = plan(c).cells[0]
    assert cell.regime.label == label
    assert (cell.warmup_command is None) == (warmup == 0)


# ---- gate: the bench backend is pinned and recorded ------------------------------------------------------------------


def test_the_bench_backend_is_the_one_the_bench_command_pins() -> None:
    p = plan(campaign())
    assert p.bench_backend == "vllm"
    for cell in p.cells:
        for bench in cell.benches:
            assert flag_value(bench.command, "--backend") == "vllm"
            assert "--ignore-eos" in bench.command


def test_a_campaign_asking_for_another_backend_is_refused() -> None:
    with pytest.raises(InputError, match="bench_backend: vLLM's bench command pins --backend vllm, not 'openai'"):
        plan(campaign(bench_backend="openai"))
    assert plan(campaign(bench_backend="vllm")).bench_backend == "vllm"


# ---- the plan's order ------------------------------------------------------------------------------------------------


def test_trials_interleave_and_every_bench_has_its_own_seed() -> None:
    c = campaign(trials=2, workload={"input_len": 128, "output_len": 16, "seed": 7})
    benches = plan(c).cells[0].benches
    assert [(b.concurrency, b.repeat, b.result_file) for b in benches] == [
        (1, 1, "bench-c1-t1.json"),
        (8, 1, "bench-c8-t1.json"),
        (1, 2, "bench-c1-t2.json"),
        (8, 2, "bench-c8-t2.json"),
    ]
    seeds = [flag_value(b.command, "--seed") for b in benches]
    assert seeds == ["8", "9", "10", "11"]  # no bench replays another's prompts into the prefix cache
    warmup = plan(c).cells[0].warmup_command
    assert warmup is not None and flag_value(warmup, "--seed") == "7"


def test_a_plan_counts_boots_and_benches_and_skips_done_cells() -> None:
    c = campaign(grid={"max_num_batched_tokens": [1024, 2048, 4096]})
    p = policy.plan_campaign(
        c, policy.base_config(c), {ENGINE.name: ["/opt/v/bin/vllm"]}, path="c.yml", done={"mnbt1024": "green"}
    )
    assert (p.boots, p.benches) == (2, 4)
    assert [x.done for x in p.cells] == ["green", None, None]
    assert p.cells[1].boot_command[:3] == ["/opt/v/bin/vllm", "serve", "m"]
