"""The real H200 A/B of an fp8 KV cache against bf16 (tests/data/vllm-0.26.0-h200-ab-fp8kv) read back: two named
workloads judged apart, telemetry beside every bench and its measured memory share next to the arithmetic % of SoL,
the accuracy gate's answers kept but never a pass on dummy weights, and the refuted lever not proposed again."""

from __future__ import annotations

import math
import shutil
import statistics
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.ledger.ab_file import AbPaths, read_spec
from redline.ops.ab.accuracy import answered
from redline.ops.ab.result import ab_close, ab_summary, levers_for
from redline.ops.ab.run import ab_run
from redline.ops.evidence.frontier import lever_frontier
from redline.ops.requests_evidence import LeverFrontierRequest
from redline.policy.frontier import open_levers, under_of
from redline.policy.noise import Sample, compare
from tests.targets.memory_target import MemoryTarget

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab-fp8kv"
AB = "l8b-fp8kv"
TRIALS = DATA / "ab" / AB / "trials"
VLLM = get_engine("vllm")
POINTS = [("short", 16), ("short", 128), ("long", 16), ("long", 128)]
LLAMA3_VOCAB = 128_256


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "ab", tmp_path / "ab")  # a copy: reading must not need to write, but prove nothing moved
    shutil.copy(DATA / "frontier.yml", tmp_path / "frontier.yml")  # as ab_run left it
    return tmp_path


def records() -> dict[str, dict]:
    return {p.name: YAML(typ="safe").load((p / "trial.yml").read_text()) for p in TRIALS.iterdir()}


def bench_files(arm: str, workload: str, c: int) -> list[Path]:
    return sorted(TRIALS.glob(f"{arm}-*/bench-{workload}-c{c}.json"))


def test_six_green_trials_on_one_gpu_each_bench_sampled_beside_it_and_benched_by_a_resident_client() -> None:
    found = records()
    assert sorted((r["order"], name) for name, r in found.items()) == [
        (1, "bf16-1"), (2, "fp8-1"), (3, "bf16-2"), (4, "fp8-2"), (5, "bf16-3"), (6, "fp8-3")
    ]  # fmt: skip
    assert all(r["ok"] and r["boot_status"] == "boot_ok" for r in found.values())
    assert len({tuple(r["node"]["gpu_uuids"]) for r in found.values()}) == 1
    for name, record in found.items():
        assert not record["model_load"]["proves_loading"]  # dummy weights: said to prove nothing about loading
        steps = record["points"]
        assert [(s["workload"], s["concurrency"]) for s in steps] == POINTS, name
        for step in steps:
            telemetry = step["telemetry"]
            assert telemetry["source"] == "nvidia-smi" and telemetry["interval_ms"] == 200
            assert telemetry["dcgm_file"] is None  # the lent H200 has no dcgmi (host.txt)
            assert (TRIALS / name / telemetry["file"]).is_file() and telemetry["others"] == []
            assert all(check["ok"] for check in step["checks"]), (name, step["checks"])
            assert step["client"].startswith("resident vLLM bench client 0.26.0")
    assert "no dcgmi" in (DATA / "host.txt").read_text()


@pytest.mark.parametrize(("workload", "c"), POINTS)
def test_every_mean_is_its_own_workload_s_bench_files(ws: Path, workload: str, c: int) -> None:
    _, arms, _ = ab_summary(ws, AB)
    for arm in arms:
        (point,) = [p for p in arm.points if (p.workload, p.concurrency) == (workload, c)]
        values = [VLLM.parse_bench_result(f.read_text()).output_throughput for f in bench_files(arm.arm, workload, c)]
        stat = point.metrics["output_throughput"]
        assert stat.values == pytest.approx(values) and stat.mean == pytest.approx(statistics.mean(values))
        expected = {"short": (512, 64), "long": (4096, 256)}[workload]
        assert (point.context.workload.name, point.context.workload.input_len, point.context.workload.output_len) == (
            workload,
            *expected,
        )


def test_each_workload_is_judged_alone_and_agrees_with_the_noise_judge_on_the_same_trials(ws: Path) -> None:
    spec, _, verdict = ab_summary(ws, AB)
    assert verdict.rigor == "VERDICT" and verdict.outcome == "per_workload" and verdict.champion is None
    assert [(w.workload, w.outcome) for w in verdict.workloads] == [
        ("short", "no_improvement"),
        ("long", "no_improvement"),
    ]
    assert [(c.workload, c.concurrency) for c in verdict.comparisons] == POINTS
    for comparison in verdict.comparisons:  # the A/B's call and the noise compare's, on the same trial figures
        base = [VLLM.parse_bench_result(f.read_text()).output_throughput for f in bench_files("bf16", *_at(comparison))]
        arm = [VLLM.parse_bench_result(f.read_text()).output_throughput for f in bench_files("fp8", *_at(comparison))]
        said = compare("output_throughput", Sample.of(base), Sample.of(arm), alpha=spec.alpha)
        assert said.outcome == "inside_noise" and comparison.outcome == "no_improvement"
        assert comparison.delta_pct == pytest.approx(said.delta_pct, abs=1e-3)
    # measured: fp8 KV was 12.91% and 10.85% slower on the short workload, 8.39% slower and 1.88% faster on the long one
    assert [c.delta_pct for c in verdict.comparisons] == pytest.approx([-12.91, -10.85, -8.39, 1.88], abs=0.01)


def _at(comparison) -> tuple[str, int]:
    return comparison.workload, comparison.concurrency


def test_the_measured_memory_share_stands_beside_the_arithmetic_share_of_sol(ws: Path) -> None:
    _, arms, _ = ab_summary(ws, AB)
    for arm in arms:
        kv_bytes = {"bf16": 131_072, "fp8": 65_536}[arm.arm]  # 32 layers x 8 KV heads x 128 x (K, V) x 2 or 1 byte
        for point in arm.points:
            sol = point.sol
            assert sol.key == "h200-sxm" and sol.kv_bytes_per_token == kv_bytes and sol.rigour == "telemetry-backed"
            csvs = [f.with_name(f.name.replace(".json", ".gpu.csv")) for f in bench_files(arm.arm, *_at(point))]
            busy = [statistics.fmean(float(row.split(",")[4]) for row in f.read_text().splitlines()) for f in csvs]
            assert sol.memory_busy_pct == pytest.approx(statistics.fmean(busy), abs=0.01)
    bf16 = {(p.workload, p.concurrency): p.sol for p in arms[0].points}
    # measured: the long workload at c=128 on bf16, 22.3% of the decode ceiling by arithmetic, memory busy 36.9%
    assert round(bf16["long", 128].pct_of_ceiling, 1) == 22.3 and round(bf16["long", 128].memory_busy_pct, 1) == 36.9


def test_the_gate_ran_through_each_server_but_dummy_weights_make_it_no_pass(ws: Path) -> None:
    _, arms, _ = ab_summary(ws, AB)
    gate = {a.arm: a.accuracy for a in arms}["fp8"]
    assert gate is not None and gate.status == "dummy_weights" and gate.risks == ["kv_cache_dtype fp8"]
    assert (gate.exact_share, gate.prefix_share) == (0.9583, 0.9661)  # measured: 23 of 24 prompts token for token
    for arm in ("bf16", "fp8"):  # why they prove nothing: random weights' logits tie, every token at -ln(vocabulary)
        answers = answered(AbPaths(ws, AB), arm, 3)
        assert answers is not None and len(answers.answers) == 24
        chosen = [lp for a in answers.answers for lp in a.logprobs if lp is not None]
        assert all(abs(lp + math.log(LLAMA3_VOCAB)) < 0.01 for lp in chosen)


@pytest.mark.anyio
async def test_the_refuted_lever_is_kept_on_the_frontier_and_not_proposed_again(ws: Path) -> None:
    frontier = YAML(typ="safe").load((ws / "frontier.yml").read_text())["frontiers"][0]
    assert [(t["lever"], t["outcome"]) for t in frontier["tried"]] == [("fp8_kv_cache", "no_improvement")]
    untried = [u["lever"] for u in frontier["untried"]]
    assert "fp8_kv_cache" not in untried
    _, _, champion, close = ab_close(ws, AB)
    assert champion is None and close is None  # no champion to close: the baseline stays
    async with MemoryTarget() as target:  # every trial is done: ab_run judges again from disk and boots nothing
        result = await ab_run(ws, read_spec(AbPaths(ws, AB)), target, i_understand_this_submits_jobs=True)
    assert result.ran == [] and len(result.skipped) == 6 and target.started == []
    # the bf16 baseline's prediction still ranks an fp8 KV cache first (+69%); the VERDICT on it has the last word
    assert [lever.lever for lever in result.next_levers] == untried and untried[0] == "cuda_graphs"
    assert result.frontier is not None and "try cuda_graphs" in result.frontier
    # judged again, the refutation now says where it holds: eager, up to c=128, requests of up to 4,352 tokens
    [frontier_now] = lever_frontier(ws, LeverFrontierRequest()).frontiers
    [refuted] = frontier_now.tried
    assert refuted.lever == "fp8_kv_cache" and refuted.under == under_of("eager", [128], 4096 + 256)
    predicted = levers_for(ws, *ab_summary(ws, AB))  # the bf16 baseline's prediction: fp8 KV first
    assert predicted[0].lever == "fp8_kv_cache"
    assert open_levers(predicted, frontier_now, under_of("graphs", [128], 4352))[0].lever == "fp8_kv_cache"  # again
    assert "fp8_kv_cache" not in [v.lever for v in open_levers(predicted, frontier_now, under_of("eager", [64], 576))]
