"""The plans the GPU scripts run on the lent H200 still read as what they are (a campaign, an A/B spec, a list of
calibration boots), so a model change that breaks one fails here, not in a device call that costs GPU time."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.models.ab import AbSpec
from redline.models.campaign import Campaign
from redline.models.serve import ServeConfig

PLANS = sorted((Path(__file__).resolve().parents[1] / "scripts" / "gpu-plans").glob("*.yml"))


@pytest.mark.parametrize("plan", PLANS, ids=[p.stem for p in PLANS])
def test_every_gpu_plan_reads_as_what_its_script_runs(plan: Path) -> None:
    data = YAML(typ="safe").load(plan.read_text().replace("MODELS/", "/models/"))
    if isinstance(data, list):  # calibration boots: a model and a serve config each
        for boot in data:
            ServeConfig.model_validate({"model": f"/models/{boot['model']}", **boot["serve"]})
            assert set(boot) <= {"model", "serve", "compile_cache"} and boot.get("compile_cache", "cold") in (
                "cold",
                "warm",
            )
    elif "arms" in data:
        AbSpec.model_validate(data)
    else:
        Campaign.model_validate(data)


def test_the_fp8_kv_ab_owed_on_the_h200_gates_accuracy_on_two_workloads() -> None:
    [plan] = [p for p in PLANS if p.stem == "ab-fp8kv-h200"]
    spec = AbSpec.model_validate(YAML(typ="safe").load(plan.read_text().replace("MODELS/", "/models/")))
    assert [a.serve.kv_cache_dtype for a in spec.arms if a.serve] == [None, "fp8"] and spec.baseline == "bf16"
    assert [name for name, _ in spec.shapes()] == ["short", "long"] and spec.trials == 3
