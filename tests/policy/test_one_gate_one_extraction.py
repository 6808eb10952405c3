"""A campaign's cells and an A/B's arms go through one max_num_seqs gate (policy/workload.py seqs_gate) and read a
bench result through one extraction (policy/figures.py metrics_of): the same facts give the same config, the same
note and the same figures, whichever operation asked."""

from __future__ import annotations

import pytest

from redline.errors import InputError
from redline.models import BenchResult, ServeConfig
from redline.models.ab import TRIAL_METRICS, AbSpec
from redline.models.campaign import Campaign, CellSpec
from redline.policy import ab as ab_policy
from redline.policy.campaign import cell_config
from redline.policy.figures import metrics_of
from redline.policy.workload import seqs_gate

BASE = ServeConfig(model="/models/m", max_model_len=4096)
RESULT = BenchResult(
    num_prompts=8,
    completed=8,
    duration=2.0,
    output_throughput=1000.0,
    median_tpot_ms=20.0,
    median_itl_ms=19.0,
    median_ttft_ms=50.0,
    p99_ttft_ms=90.0,
)


def spec(**arm_b: object) -> AbSpec:
    serve = {"model": "/models/m", "max_model_len": 4096}
    return AbSpec.model_validate(
        {
            "name": "ab",
            "target": "local",
            "arms": [{"name": "a", "serve": serve}, {"name": "b", "serve": serve | arm_b}],
            "workload": {"input_len": 128, "output_len": 16},
            "concurrencies": [1, 4],
        }
    )


def campaign(**base: object) -> Campaign:
    return Campaign.model_validate(
        {
            "name": "c",
            "target": "local",
            "model": "/models/m",
            "base": {"max_model_len": 4096, **base},
            "workload": {"input_len": 128, "output_len": 16},
            "concurrencies": [1, 4],
            "cells": [{"name": "x"}],
        }
    )


def test_an_unset_max_num_seqs_is_pinned_to_the_top_concurrency_with_one_note_for_cells_and_arms() -> None:
    made = cell_config(campaign(), BASE, CellSpec(name="x"))
    arm, notes = ab_policy.gate_arm(spec(), "a", BASE, own=False, source="the known-good entry")
    assert made.config.max_num_seqs == arm.max_num_seqs == 4
    assert (
        made.notes
        == notes
        == [
            "max_num_seqs was unset (the engine's default depends on the hardware): pinned to 4, the highest concurrency"
        ]
    )


def test_a_value_from_elsewhere_is_raised_and_said_for_an_arm_as_for_a_cell() -> None:
    """The A/B used to refuse a known-good entry's max_num_seqs below its top concurrency; it raises it now, as the
    campaign does (METHODOLOGY.md 9 and 18), and the gate says from where."""
    low = BASE.model_copy(update={"max_num_seqs": 2})
    arm, notes = ab_policy.gate_arm(spec(), "a", low, own=False, source="the known-good entry")
    assert arm.max_num_seqs == 4
    assert notes == ["max_num_seqs 2 (from the known-good entry) raised to 4, the highest concurrency"]
    made = cell_config(campaign(max_num_seqs=2), low, CellSpec(name="x"))
    assert made.notes == ["max_num_seqs 2 (from base) raised to 4, the highest concurrency"]


def test_a_value_the_cell_or_arm_set_itself_below_the_top_is_refused_naming_it() -> None:
    with pytest.raises(InputError, match=r"arm 'b': max_num_seqs 2 \(set by the arm\) is below the highest"):
        ab_policy.gate_arm(spec(), "b", BASE.model_copy(update={"max_num_seqs": 2}), own=True, source="")
    with pytest.raises(InputError, match=r"cell 'y': max_num_seqs 2 \(set by the cell\) is below the highest"):
        cell_config(campaign(), BASE, CellSpec(name="y", max_num_seqs=2))
    assert seqs_gate(BASE.model_copy(update={"max_num_seqs": 8}), [1, 4], "arm", "b", own=True, source="") == (
        BASE.model_copy(update={"max_num_seqs": 8}),
        [],
    )


def test_an_ab_trial_reads_a_bench_result_as_a_campaign_cell_does_per_user_included() -> None:
    config = BASE.model_copy(update={"tensor_parallel_size": 2})
    cell = metrics_of(RESULT, config)
    trial = ab_policy.trial_metrics(RESULT, config)
    assert trial == {m: v for m, v in cell.items() if m in TRIAL_METRICS}
    assert trial["tokens_per_s_per_user"] == 50.0 and trial["output_throughput_per_gpu"] == 500.0
    assert "p99_ttft_ms" in cell and "p99_ttft_ms" not in trial  # the A/B's table is the campaign's, narrowed
