"""The verdict tools (server/evidence_tools.py), once each, through whatever client tests/server/scenario.py drives
(in-process, stdio, HTTP): an A/B's dry run, its ack gate, a 3-trial A/B on the fake engine, a baseline from one arm and a diff of the
other, and the known-good registry."""

from __future__ import annotations

from typing import Any

from tests.server.helpers import LLAMA8B, free_port

VERDICT_TOOLS = {
    "ab_run",
    "perf_baseline_record",
    "perf_baseline_diff",
    "known_good_record",
    "known_good_lookup",
    "known_good_list",
    "known_good_config",
    "champion_apply",
    "lever_frontier",
}


def ab_spec(port: int) -> dict[str, Any]:
    serve = {"model": str(LLAMA8B), "max_model_len": 4096, "port": port}
    return {
        "name": "ab1",
        "target": "local",
        "baseline": "a",
        "claim": "latency",
        "arms": [
            {"name": "a", "serve": serve | {"max_num_batched_tokens": 2048}},
            {"name": "b", "serve": serve | {"max_num_batched_tokens": 8192}},
        ],
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1],
        "warmup_requests": 0,
    }


async def exercise_evidence_tools(ok: Any, err: Any) -> None:
    spec = ab_spec(free_port())
    dry = await ok("ab_run", spec=spec, dry_run=True)
    assert dry["job_id"] is None and dry["result"]["plan"]["boots"] == 6 and dry["result"]["dry_run"]
    assert "pass i_understand_this_submits_jobs=true" in await err("ab_run", spec=spec)
    ran = await ok("ab_run", spec=spec, i_understand_this_submits_jobs=True, wait_s=120)
    assert ran["state"] == "succeeded", ran
    result = ran["result"]
    assert len(result["ran"]) == 6 and result["verdict"]["rigor"] == "VERDICT", result["verdict"]["summary"]
    assert result["arms"][0]["points"][0]["context"]["node"]["hostname"] and result["next_levers"]

    recorded = await ok("perf_baseline_record", name="ab1-a", ab="ab1", arm="a", note="the config in production")
    assert recorded["path"] == "baselines.yml" and recorded["baseline"]["points"][0]["context"]["trials"] == 3
    diff = await ok(
        "perf_baseline_diff",
        baseline="ab1-a",
        ab="ab1",
        arm="b",
        focus="median_tpot_ms",
        guarded=["median_tpot_ms", "median_itl_ms"],
    )
    assert (
        diff["colour"] == "YELLOW" and "no change" in diff["reason"] and "inside the noise" in diff["reason"]
    )  # the fake's TPOT is the same

    entry = (await ok("known_good_record", from_ab="ab1", arm="b", why="the A/B's better arm"))["entry"]
    assert entry["engine_version"] == "0.26.0" and entry["evidence"][0]["kind"] == "ab_arm"
    found = await ok("known_good_lookup", model=entry["model"], hardware=entry["hardware"], engine_version="0.26.0")
    assert found["found"] and found["entry"]["knobs"]["max_num_batched_tokens"] == 8192
    listed = await ok("known_good_list")
    assert [e["model"] for e in listed["entries"]] == [str(LLAMA8B)]
    # the design card's one tool answers as the three do (its verbs)
    assert await ok("known_good_config", verb="list") == listed
    same = await ok(
        "known_good_config", verb="lookup", model=entry["model"], hardware=entry["hardware"], engine_version="0.26.0"
    )
    assert same == found
    # the A/B kept its levers on the frontier: b's max_num_batched_tokens, judged no improvement by the VERDICT
    frontier = await ok("lever_frontier", model=entry["model"])
    [kept] = frontier["frontiers"]
    assert [(t["lever"], t["outcome"]) for t in kept["tried"]] == [("max_num_batched_tokens", "no_improvement")]
    assert "max_num_batched_tokens" not in {v["lever"] for v in kept["untried"]} and frontier["next"]
    # this A/B crowned no arm (the fake's TPOT is the same): there is nothing to write into a deploy
    refused = await err("champion_apply", ab="ab1", values="deploy/values.yaml", baseline="prod", dry_run=True)
    assert "A/B 'ab1' has no champion" in refused
