"""A campaign's plan predicts each cell on the target's GPU before any boot, and names a cell whose workload cannot
fit (issue 21, item 5): qwen32b on an H200 holds about 256k KV tokens in bf16 (its real boots say 256,848), under
the 294,912 its workload needs at c=64 (64 x 4,608); an fp8 cache doubles it."""

from __future__ import annotations

import json
from pathlib import Path

from redline.models.memory import GpuSpec
from redline.models.serve import ServeConfig
from redline.models.shape import shape_of
from redline.ops.campaign.plan import campaign_plan
from redline.ops.evidence.context import files_from_text
from redline.ops.evidence.known_good_apply import Identity
from redline.ops.experiment.predicted import feasibility
from redline.ops.experiment.prepare import Survey
from redline.ops.predict.predict import Question, calibration_boots, predict_config
from redline.targets import GpuInfo, HostInfo

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200" / "models" / "qwen32b"
H200 = HostInfo(hostname="h200", gpus=[GpuInfo(name="NVIDIA H200", memory_mib=143_771)])


def campaign(tmp_path: Path) -> Path:
    spec = {
        "name": "q32",
        "target": "local",
        "model": "/models/qwen32b",
        "base": {"max_model_len": 32768, "max_num_batched_tokens": 8192, "load_format": "dummy"},
        "workload": {"input_len": 4096, "output_len": 512},
        "concurrencies": [8, 64],
        "grid": {"kv_cache_dtype": ["auto", "fp8"]},
    }
    path = tmp_path / "campaigns" / "q32.yml"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(spec))
    return path


def run_on_h200(tmp_path: Path) -> Survey:
    """The target as campaign_run surveys it: an H200, vLLM 0.26.0, qwen32b's config.json."""
    identity = Identity("h200", "0.26.0", host=H200)
    files = files_from_text((DATA / "config.json").read_text())
    return Survey(tmp_path / "known-good.yml", False, {"vllm": identity}, {"/models/qwen32b": files})


def test_a_cell_whose_workload_cannot_fit_is_named_before_it_boots(tmp_path: Path) -> None:
    plan = campaign_plan(campaign(tmp_path), survey=run_on_h200(tmp_path))
    cells = {c.name: c for c in plan.cells}
    auto, fp8 = cells["kvauto"].predicted, cells["kvfp8"].predicted
    assert auto is not None and fp8 is not None and auto.provenance == "predicted"
    assert auto.needed_tokens == fp8.needed_tokens == 64 * (4096 + 512) == 294_912
    assert auto.feasible == "no" and abs(auto.kv_cache_tokens - 256_848) / 256_848 < 0.01
    assert fp8.feasible == "yes" and fp8.kv_cache_tokens_low > 294_912
    assert any("predicted infeasible" in g and "kvauto" in g for g in plan.gates), plan.gates
    assert plan.boots == 2  # named, not dropped: the person may still run it


def test_without_a_target_the_plan_predicts_nothing(tmp_path: Path) -> None:
    plan = campaign_plan(campaign(tmp_path))
    assert all(c.predicted is None for c in plan.cells)


def test_the_workload_s_fit_is_judged_against_the_band() -> None:
    shape, _ = shape_of(json.loads((DATA / "config.json").read_text()))
    gpu = GpuSpec(name="NVIDIA H200", memory_gib=140.4)
    boots = calibration_boots("vllm", None)
    p = predict_config(Question("vllm", "0.26.0", gpu, shape, ServeConfig(model="/m", max_model_len=32768)), boots)
    assert feasibility(p, p.kv_cache_tokens_low).feasible == "yes"
    assert feasibility(p, p.kv_cache_tokens_low + 1).feasible == "at risk"
    assert feasibility(p, p.kv_cache_tokens_high + 1).feasible == "no"
    too_long = predict_config(
        Question("vllm", "0.26.0", gpu, shape, ServeConfig(model="/m", max_model_len=400_000)), boots
    )
    said = feasibility(too_long, 1)
    assert said.feasible == "no" and "one request of max_model_len 400,000" in said.why
