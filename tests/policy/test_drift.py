"""Drift for a campaign's cells, on the real H200 landscape: each recorded cell predicted as its plan would predict
it (the shipped corpus, the cell's own config), then judged against its own boot log; a prediction moved off the
boot is called drift with its numbers, and the band is compared whole (with the tokens the engine keeps back), as
the boot counts them."""

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.models import ServeConfig
from redline.models.memory import GpuSpec
from redline.models.shape import shape_of
from redline.ops.experiment.predicted import feasibility
from redline.ops.predict.predict import Question, calibration_boots, predict_config
from redline.policy.drift import kv_drift

ROOT = Path(__file__).resolve().parents[2]
CELLS = ROOT / "tests" / "data" / "vllm-0.26.0-h200-landscape" / "landscape-h200" / "l8b-landscape" / "cells"
MODEL = ROOT / "src" / "redline" / "data" / "boots" / "models" / "llama8b" / "config.json"
H200 = GpuSpec(name="NVIDIA H200", memory_gib=140.4)
VLLM = get_engine("vllm")


def planned(cell: Path):  # noqa: ANN201
    """The cell's prediction as its campaign's plan makes it, and its boot's signals."""
    verdict = YAML(typ="safe").load((cell / "verdict.yml").read_text())
    serve = ServeConfig.model_validate(verdict["context"]["serve"])
    shape, _ = shape_of(json.loads(MODEL.read_text()))
    prediction = predict_config(Question("vllm", "0.26.0", H200, shape, serve), calibration_boots("vllm", None))
    return feasibility(prediction, needed=128 * 576), VLLM.parse_boot_log((cell / "boot.log").read_text())


@pytest.mark.parametrize("cell", sorted(CELLS.iterdir()), ids=lambda p: p.name)
def test_a_recorded_cell_booted_inside_its_predicted_band(cell: Path) -> None:
    predicted, signals = planned(cell)
    assert predicted.feasible == "yes" and kv_drift(predicted, signals) is None
    assert abs(predicted.kv_cache_tokens - signals.kv_cache_tokens) / signals.kv_cache_tokens < 0.01


def test_a_prediction_off_the_boot_is_drift_with_its_numbers() -> None:
    predicted, signals = planned(CELLS / "mnbt1024-seqs128-kvauto")
    moved = predicted.model_copy(
        update={
            "kv_cache_tokens": predicted.kv_cache_tokens + 50_000,
            "kv_cache_tokens_low": predicted.kv_cache_tokens_low + 50_000,
            "kv_cache_tokens_high": predicted.kv_cache_tokens_high + 50_000,
        }
    )
    said = kv_drift(moved, signals)
    assert said is not None and f"{signals.kv_cache_tokens:,} KV tokens booted" in said
    assert f"{moved.kv_cache_tokens:,} predicted" in said and "%" in said


def test_the_band_is_the_prediction_s_own_whole_counts() -> None:
    """The cell keeps memory_predict's figures unchanged (whole, as the log counts): the workload's fit is judged
    less the reserved tokens, the boot's drift against the whole band."""
    predicted, signals = planned(CELLS / "mnbt1024-seqs128-kvauto")
    seen = signals.kv_cache_tokens
    edge = predicted.model_copy(update={"kv_cache_tokens": seen, "kv_cache_tokens_low": seen - 1000})
    assert kv_drift(edge.model_copy(update={"kv_cache_tokens_high": seen}), signals) is None
    assert kv_drift(edge.model_copy(update={"kv_cache_tokens_high": seen - 16}), signals) is not None
    assert kv_drift(None, signals) is None


WARM_CELL = ROOT / "tests" / "data" / "vllm-0.26.0-h200-campaign" / "l8b-h200" / "cells" / "mnbt8192-seqs512"


def test_a_warm_boot_above_its_cold_prediction_is_not_drift_but_a_cold_one_would_be() -> None:
    """A campaign's cell predicted cold (a fresh deployment's), booted on the compile cache an earlier boot left
    (the real H200 cell mnbt8192-seqs512, warm: 898,784 KV tokens): above the cold band, as a warm boot is; the same
    count from a cold boot, or against a prediction that says no state, is drift."""
    verdict = YAML(typ="safe").load((WARM_CELL / "verdict.yml").read_text())
    serve = ServeConfig.model_validate(verdict["context"]["serve"])
    shape, _ = shape_of(json.loads(MODEL.read_text()))
    cold = predict_config(Question("vllm", "0.26.0", H200, shape, serve), calibration_boots("vllm", None))
    signals = VLLM.parse_boot_log((WARM_CELL / "boot.log").read_text())
    assert cold.compile_cache == "cold" and signals.compile_cache == "warm"
    assert signals.kv_cache_tokens is not None and signals.kv_cache_tokens > cold.kv_cache_tokens_high
    assert kv_drift(feasibility(cold, needed=1), signals) is None
    as_cold = signals.model_copy(update={"compile_cache": "cold"})
    assert kv_drift(feasibility(cold, needed=1), as_cold) is not None
    unsaid = feasibility(cold, needed=1).model_copy(update={"compile_cache": None})
    assert kv_drift(unsaid, signals) is not None
