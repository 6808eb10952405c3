"""Issue 40's "Why", each bullet tried again as a new user would, over MCP alone, on the fake engine (its servers in
child processes through the real LocalTarget), and the one answer shown. The A/B bullet whose trials are the real
H200's (lever_frontier beside RED guards) is tests/server/test_one_judge.py's.

The fake's boots of one config differ as a noisy host's do (FAKE_VLLM_BOOT_SPEEDS: each boot a speed of its own, as
the CPU build's boots differed by 16-26%), and its figures follow its server's config alone (FAKE_VLLM_DECODE_MODEL),
so max_num_seqs 8 against 4 at c <= 4 is the UX run's no-op pair: two cells that cannot differ but by their boots.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.ops import session as sessions
from redline.server.app import build_server
from tests.server.helpers import LLAMA8B, Env, call, fake_servers, write_env, write_targets
from tests.server.test_resolved_echo import Heard, ab_spec, counting_targets, probes_in

pytestmark = pytest.mark.anyio
SPEEDS = "1.0,0.8,1.15,0.9,1.05,0.85"  # boot k's speed: the no-op pair's first boots 20% apart


def fake_env(tmp_path: Path) -> Env:
    """A workspace with the llama8b shape, its `local` target booting the fake vLLM, each boot a speed of its own."""
    made = write_env(tmp_path / "srv")
    model = made.workspace / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    write_targets(
        made,
        FAKE_VLLM_DECODE_MODEL="1",
        FAKE_VLLM_BOOT_SPEEDS=SPEEDS,
        FAKE_VLLM_BOOTS_FILE=str(tmp_path / "boots.txt"),
    )
    return made


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return fake_env(tmp_path)


def no_op_pair(env: Env, name: str = "seqs", **changes: Any) -> str:
    """The UX run's no-op pair as a campaign file: max_num_seqs 8 (the baseline) against 4, at c <= 4."""
    spec = {
        "name": name,
        "target": "local",
        "model": str(env.workspace / "models" / "llama8b"),
        "base": {"max_model_len": 4096, "port": env.port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "warmup_requests": 2,
        "grid": {"max_num_seqs": [8, 4]},
        **changes,
    }
    path = env.workspace / "campaigns" / f"{name}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec))
    return f"campaigns/{name}.yml"


async def run(client: Client, campaign: str, heard: Heard | None = None) -> dict[str, Any]:
    args = {"campaign": campaign, "i_understand_this_submits_jobs": True, "wait_s": 120}
    result = await client.call_tool("campaign_run", args, progress_callback=heard)
    assert not result.is_error, result.content
    job = result.structured_content
    assert job["state"] == "succeeded", job
    return job["result"]


def calls(metrics: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {m["metric"]: (m["status"], m["delta_pct"], m["noise"]["basis"]) for m in metrics if m["noise"]}


async def test_the_diff_of_two_campaign_cells_is_champion_select_s_call_on_every_metric(env: Env) -> None:
    """Why 1 and 5: perf_baseline_diff read each cell's first boot and the default 3% band ("RED ... worse by
    20.00% ... beyond the noise (no spread on either side: the 3% band, METHODOLOGY.md's default)") where
    champion_select said "no improvement" by the band measured between the boots; the table showed first boots."""
    campaign = no_op_pair(env)
    async with Client(build_server(env.config)) as client:
        ran = await run(client, campaign)
        champion = await call(client, "champion_select", campaign=campaign)
        await call(client, "perf_baseline_record", name="seqs8", campaign=campaign, cell="seqs8")
        diff = await call(client, "perf_baseline_diff", baseline="seqs8", campaign=campaign, cell="seqs4")
        table = await call(client, "campaign_aggregate", campaign=campaign)
    assert ran["boots"] == 4 and "(measured: the boot-to-boot spread of" in ran["reason"]
    (seqs4,) = [c for c in champion["ranked"] if c["cell"] == "seqs4"]
    assert champion["champion"] is None and seqs4["outcome"] == "no_improvement" and seqs4["band_source"] == "measured"
    assert diff["colour"] == "YELLOW", diff["reason"]
    assert len(seqs4["compared"]) == len(diff["points"]) == 2
    for mine, theirs in zip(seqs4["compared"], diff["points"], strict=True):
        assert mine["colour"] == theirs["colour"]
        a, b = calls(mine["metrics"]), calls(theirs["metrics"])
        assert {k: a[k] for k in a.keys() & b.keys()} == {k: b[k] for k in a.keys() & b.keys()} and b
    focus = diff["points"][-1]["metrics"][0]
    assert focus["current"]["n"] == 2 and focus["noise"]["basis"] == "measured"
    row = next(r for r in table["rows"] if (r["cell"], r["concurrency"]) == ("seqs4", 4))
    assert row["focus_n"] == 2  # the mean of both boots, as the call was made on
    assert fake_servers(env.port) == []


async def test_a_campaign_that_boots_no_replicate_is_judged_by_the_spread_earlier_boots_measured(env: Env) -> None:
    """Why 3: with replicates: 0 the same no-op change was "worse by 37.78%" by the 3% band, though the workspace
    held measured boot-to-boot spreads of that model on that host. With none anywhere, the plan warns first."""
    again = no_op_pair(env, "again", replicates=0)
    async with Client(build_server(env.config)) as client:
        dry = await call(client, "campaign_run", campaign=again, dry_run=True)
        assert dry["result"]["plan"]["noise"].startswith("warning: noise band 3% (default: METHODOLOGY.md's default")
        assert "replicates: 1 measures it for 2 boots" in dry["result"]["plan"]["noise"]
        await run(client, no_op_pair(env))  # the first campaign measures the spread, and keeps it in noise.yml
        await run(client, again)
        status = await call(client, "campaign_status", campaign=again)
        champion = await call(client, "champion_select", campaign=again)
    assert (env.workspace / "noise.yml").is_file()
    assert "noise band" in status["noise"] and "(earlier: from earlier boots of" in status["noise"]
    assert "(campaigns/seqs.yml)" in status["noise"]
    (seqs4,) = [c for c in champion["ranked"] if c["cell"] == "seqs4"]
    assert seqs4["band_source"] == "earlier" and seqs4["outcome"] == "no_improvement", seqs4["why"]


async def test_a_bench_s_tpot_under_the_floor_is_flagged_and_never_claimed_on(env: Env) -> None:
    """Why 4: an A/B's latency claim took a median TPOT of 0.0026 ms (beside 4.40 and 4.84) at face value."""
    write_targets(
        env,
        FAKE_VLLM_DECODE_MODEL="1",
        FAKE_VLLM_BOOTS_FILE=str(env.root / "ab-boots.txt"),
        FAKE_VLLM_ODD_TPOT_AT="2",  # the second boot: arm b's first trial
    )
    spec = ab_spec(env.port) | {"name": "odd", "claim": "latency"}
    async with Client(build_server(env.config)) as client:
        job = await call(client, "ab_run", spec=spec, i_understand_this_submits_jobs=True, wait_s=120)
    ab = job["result"]
    (b1,) = [t for t in ab["arms"] if t["arm"] == "b"]
    assert b1["trials_ok"] == 3 and b1["trials_failed"] == []  # its TTFT and throughput are measured
    verdict = ab["verdict"]
    (flag,) = [f for f in verdict["flags"] if f["metric"] == "median_tpot_ms"]
    assert flag["rule"] == "under_floor" and flag["where"] == "b at c=4" and "0.0026 ms" in flag["why"], verdict[
        "flags"
    ]
    (b_at_4,) = [c for c in verdict["comparisons"] if c["arm"] == "b"]
    assert b_at_4["outcome"] == "untestable" and b_at_4["noise"]["outcome"] == "flagged"  # never claimed on
    assert "implausible, not claimed on: median_tpot_ms (b at c=4)" in verdict["summary"], verdict["summary"]


async def test_progress_moves_during_a_boot_and_no_line_is_said_stale(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why 7: progress sat still through a whole boot and repeated a stale "10s elapsed"."""
    write_targets(env, FAKE_VLLM_DECODE_MODEL="1", FAKE_VLLM_BOOT_S="2.5")
    monkeypatch.setattr(sessions, "BOOT_POLL_S", 0.5)
    campaign = no_op_pair(env, replicates=0)
    heard = Heard()
    async with Client(build_server(env.config)) as client:
        await run(client, campaign, heard)
    second = [m for m in heard.messages if "cell 2 of 2 (seqs4): booting for" in m]
    assert second and all("(the last boot took 2s)" in m or "(the last boot took 3s)" in m for m in second), second
    fractions = [float(m.split(": ")[1].split("%")[0]) for m in second]
    assert fractions[-1] > fractions[0]  # it moves against the last boot of that setup, not the 30-min deadline
    assert not any("s elapsed" in m for m in heard.messages)


async def test_the_engine_version_is_asked_once_per_target_per_server(env: Env) -> None:
    """Why 7: each acked run was silent 7-8 s on the CPU build while it asked the engine's version again."""
    probes = counting_targets(env)
    campaign = no_op_pair(env, replicates=0)
    async with Client(build_server(env.config)) as client:
        await call(client, "campaign_run", campaign=campaign, dry_run=True)
        await run(client, campaign)
        ab = ab_spec(env.port) | {"trials": 1}
        await call(client, "ab_run", spec=ab, i_understand_this_submits_jobs=True, wait_s=120)
    assert probes_in(probes) == 1  # the dry run asked; the campaign's run and the A/B's did not ask again
