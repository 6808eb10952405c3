"""campaign_run for real: the fake engine in real child processes, through the real LocalTarget.

Covers the ack gate, the dry run, a full campaign (one boot per cell), fail-fast and continue_on_red,
resume after a kill -9 of the runner, cancellation, and one runner per campaign.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from redline.errors import InputError, RunFailed
from redline.ledger.campaign_file import cells_of, read_verdict
from redline.ledger.server_record import load_server
from redline.models.campaign_results import CampaignRunResult
from redline.ops.campaign.plan import campaign_plan
from redline.ops.campaign.results import campaign_aggregate, campaign_status, champion_select
from redline.ops.campaign.run import campaign_run
from tests.campaign.helpers import Fake, make_fake, wait_until_gone
from tests.conftest import pid_running, processes_naming
from tests.server.helpers import FAKE_VLLM, fake_servers

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


def boots(fake: Fake) -> int:
    """Servers the target started: one run folder each."""
    runs = fake.root / "target" / "runs"
    return len([d for d in runs.iterdir() if (d / "boot.log").exists()]) if runs.exists() else 0


def results(fake: Fake, name: str = "c1") -> Path:
    return fake.campaigns / name


# ---- the ack gate and the dry run ------------------------------------------------------------------------------------


@pytest.mark.parametrize("ack", [False, "yes", 1])
async def test_nothing_starts_without_the_ack(fake: Fake, ack: object) -> None:
    path = fake.write()
    with pytest.raises(InputError) as exc:
        await campaign_run(path, fake.target(), i_understand_this_submits_jobs=ack)  # type: ignore[arg-type]
    assert "pass i_understand_this_submits_jobs=true" in str(exc.value) and "dry_run=true" in str(exc.value)
    assert not results(fake).exists() and not (fake.root / "target").exists()
    assert processes_naming(fake.root) == []


async def test_a_dry_run_lists_every_command_in_order_and_starts_nothing(fake: Fake) -> None:
    path = fake.write(workload={"input_len": 128, "output_len": 16, "num_prompts": 3})
    result = await campaign_run(path, fake.target(), i_understand_this_submits_jobs=False, dry_run=True)
    plan = result.plan
    assert result.dry_run and plan is not None and (plan.boots, plan.benches) == (2, 4)
    assert "none started" in result.reason
    assert [c.name for c in plan.cells] == ["mnbt2048", "mnbt8192"]
    for cell in plan.cells:
        assert cell.boot_command[:3] == [sys.executable, str(FAKE_VLLM), "serve"]
        assert cell.warmup_command is not None and "bench" in cell.warmup_command
        assert [(b.concurrency, b.num_prompts) for b in cell.benches] == [(1, 3), (4, 8)]
        assert "concurrency 4: num_prompts 3 raised to 8" in " ".join(cell.gates)  # the gate, stated
    assert not results(fake).exists() and not (fake.root / "target").exists()
    assert processes_naming(fake.root) == []
    assert campaign_plan(path, target=fake.target()) == plan


# ---- a full campaign -------------------------------------------------------------------------------------------------


async def test_a_full_campaign_boots_each_cell_once_and_leaves_its_verdicts(fake: Fake) -> None:
    path = fake.write()
    seen: list[tuple[float, str]] = []

    async def progress(fraction: float, text: str) -> None:
        seen.append((fraction, text))

    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True, progress=progress)
    # 2 cells x 2 concurrencies = 2 boots, not 4; then the top two (both) booted again: the boot-to-boot noise
    assert result.boots == 4 and boots(fake) == 4
    assert [(o.cell, o.replicate, o.verdict) for o in result.ran] == [
        ("mnbt2048", 1, "green"),
        ("mnbt8192", 1, "green"),
        ("mnbt2048", 2, "green"),
        ("mnbt8192", 2, "green"),
    ]
    assert "2 replicate boot(s) of the top cells; noise band" in result.reason and "(measured: " in result.reason
    assert not result.stopped_early and "champion_select" in result.next
    for cell, mnbt in (("mnbt2048", 2048), ("mnbt8192", 8192)):
        folder = results(fake) / "cells" / cell
        assert {p.name for p in folder.iterdir()} >= {"verdict.yml", "boot.log", "bench-c1.json", "bench-c4.json"}
        v = read_verdict(results(fake), cell)
        assert v is not None and v.verdict == "green" and v.boot.status == "boot_ok"
        assert v.boot.signals.kv_cache_tokens and v.boot.signals.memory.weights_gib == 15.0
        assert [r.concurrency for r in v.results] == [1, 4] and all(r.ok for r in v.results)
        assert v.results[1].metrics["output_throughput"].mean > 0 and v.results[1].num_prompts == 16
        checks = v.results[1].repeats[0].checks  # read around the bench from the server's GET /metrics
        assert [c.check for c in checks] == [
            "prefix_cache",
            "client",
            "window",
            "figures",
            "gpu",
            "gpu_health",
        ] and all(c.ok for c in checks)
        said = checks[0].said  # the cache emptied just before the bench (the server's dev mode, on loopback)
        assert said.startswith("prefix cache emptied just before the bench (POST http://127.0.0.1:")
        assert said.endswith("/reset_prefix_cache): 0.0% of 2,048 prompt tokens were found in it")  # 16 x 128
        assert v.commands.boot[v.commands.boot.index("--max-num-batched-tokens") + 1] == str(mnbt)
        assert len(v.commands.bench) == 2 and all("--result-dir" in a and "$RUN_DIR" not in a for a in v.commands.bench)
        ctx = v.context
        assert ctx.bench is not None and ctx.provenance == "measured"
        assert (ctx.engine.name, ctx.engine.version, ctx.bench.backend) == ("vllm", "0.26.0", "vllm")
        assert (
            ctx.regime.label == "warm/graphs"
            and ctx.serve.max_num_seqs == 4
            and ctx.node is not None
            and ctx.node.hostname
            and ctx.trials == 1
        )
        assert ctx.model.config_hash is not None and ctx.warmup_requests == 2
        assert any("max_num_seqs was unset" in g for g in v.gates)
        # the server's log, not the bench client's
        assert "Starting main benchmark run" not in (folder / "boot.log").read_text()
    assert cells_of(results(fake)).server_files() == [] and processes_naming(fake.root) == []
    assert any("cell 2 of 4 (mnbt8192)" in text and "concurrency 4" in text for _, text in seen)
    # the 4th unit is the runner-up's replicate: which of the two ranks second is the noise's to say
    assert any(re.search(r"cell 4 of 4 \(mnbt(2048|8192)\.boot2\)", text) for _, text in seen), seen[-3:]
    for cell in ("mnbt2048", "mnbt8192"):
        replicate = read_verdict(results(fake), cell, 2)
        assert replicate is not None and replicate.replicate == 2 and replicate.verdict == "green"
    assert seen[-1][0] == 1.0

    status = campaign_status(path)
    assert (status.total, status.done, status.green, status.running) == (2, 2, 2, [])
    table = campaign_aggregate(path)
    assert [(r.cell, r.concurrency) for r in table.rows] == [
        ("mnbt2048", 1),
        ("mnbt2048", 4),
        ("mnbt8192", 1),
        ("mnbt8192", 4),
    ]
    champion = champion_select(path)
    assert champion.rigor == "DRAFT" and champion.outcome in ("improvement", "no_improvement")

    async with fake.target() as target:  # a re-run finds every cell done: nothing boots
        again = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert again.boots == 0 and again.skipped == ["mnbt2048", "mnbt8192"] and boots(fake) == 4


async def test_a_cell_whose_benches_found_their_prompts_cached_is_red_and_a_run_of_only_such_cells_fails(
    tmp_path: Path,
) -> None:
    # the server's metrics: 40% of prompt tokens found, in what another client sent it before each bench; its target
    # turns vLLM's dev mode off, so no reset empties it
    fake = make_fake(
        tmp_path, FAKE_VLLM_PREFIX_HITS="0.4", FAKE_VLLM_OTHER_CLIENT_TOKENS="4096", VLLM_SERVER_DEV_MODE="0"
    )
    path = fake.write(grid={"max_num_batched_tokens": [8192]})
    async with fake.target() as target:
        with pytest.raises(RunFailed) as failed:
            await campaign_run(path, target, i_understand_this_submits_jobs=True)
    result = failed.value.result
    assert isinstance(result, CampaignRunResult) and [o.verdict for o in result.ran] == ["red"]
    v = read_verdict(results(fake), "mnbt8192")
    assert v is not None and v.verdict == "red"
    assert "4.4% of 4,608 prompt tokens were found in it" in v.reason and "not ranked" in v.reason, v.reason
    assert "(VLLM_SERVER_DEV_MODE=1 is off: the target's env sets it otherwise)" in v.reason  # why not emptied
    assert "prompt tokens since it booted that redline did not send (another client's requests)" in v.reason
    flagged = [c for r in v.results for t in r.repeats for c in t.checks if not c.ok]
    assert [c.check for c in flagged] == ["prefix_cache", "prefix_cache"]  # both concurrencies ran, both flagged
    assert champion_select(path).champion is None
    # the run ends failed, naming the cause (the cell's reason) and the fix (empty the cache, or another seed)
    assert result.failed is not None and result.failed.startswith("every cell failed (1 of 1): concurrency 1")
    assert "let redline empty it before each bench" in result.next and "another seed" in result.next
    assert result.next.endswith("delete cells/mnbt8192 in the results folder c1/ and run campaign_run again")
    assert str(failed.value) == f"{result.failed}. Fix: {result.next}"


async def test_a_warm_server_emptied_before_each_bench_leaves_its_cells_clean(tmp_path: Path) -> None:
    fake = make_fake(tmp_path, FAKE_VLLM_PREFIX_HITS="0.4")  # what the server served before is in its cache...
    path = fake.write(grid={"max_num_batched_tokens": [8192]})
    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)  # ...and emptied each time
    v = read_verdict(results(fake), "mnbt8192")
    assert v is not None and v.verdict == "green" and result.failed is None, v.reason
    said = [c.said for r in v.results for t in r.repeats for c in t.checks if c.check == "prefix_cache"]
    assert len(said) == 2 and all("emptied just before the bench" in s and ": 0.0% of" in s for s in said)


async def test_dev_mode_off_fresh_prompts_keep_a_cell_clean_and_its_record_says_so(tmp_path: Path) -> None:
    # a target whose engine port others reach (dev_mode: false): no reset; each bench's prompts repeat 6% of
    # themselves (random prompts starting alike), and nothing but redline's benches reached the server
    fake = make_fake(tmp_path, FAKE_VLLM_OWN_REPEATS="0.062", FAKE_VLLM_PREFIX_HITS="0.4")
    path = fake.write(grid={"max_num_batched_tokens": [8192]})
    async with fake.target(dev_mode=False) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(results(fake), "mnbt8192")
    assert v is not None and v.verdict == "green" and result.failed is None, v.reason
    cache = [c for r in v.results for t in r.repeats for c in t.checks if c.check == "prefix_cache"]
    assert len(cache) == 2 and {c.clean_by for c in cache} == {"fresh prompts"}
    assert all("not emptied before the bench (VLLM_SERVER_DEV_MODE=1 is off: target local's" in c.said for c in cache)
    assert all("6.2% of" in c.said and "fresh prompts (seed " in c.said for c in cache)
    boot_env = (fake.root / "target").rglob("boot.log")
    assert not any("VLLM_SERVER_DEV_MODE" in p.read_text() for p in boot_env)
    # the same cell on the same kind of target, another client sending the server prompts: red
    shutil.rmtree(results(fake) / "cells")
    async with fake.target(dev_mode=False, FAKE_VLLM_OTHER_CLIENT_TOKENS="4096") as target:
        with pytest.raises(RunFailed):
            await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(results(fake), "mnbt8192")
    assert v is not None and v.verdict == "red" and "a warm cache the bench did not ask for" in v.reason


async def test_a_campaign_on_another_target_is_refused(fake: Fake) -> None:
    with pytest.raises(InputError, match="runs on target 'gpu-1', not 'local'"):
        await campaign_run(fake.write(target="gpu-1"), fake.target(), i_understand_this_submits_jobs=True)
    assert not (fake.root / "target").exists()


# ---- red cells: fail-fast and continue_on_red ------------------------------------------------------------------------


def _red_grid(fake: Fake, **changes: object) -> Path:
    # the fake GPU runs out of memory profiling more than 4096 batched tokens: the middle cell cannot boot
    return fake.write(grid={"max_num_batched_tokens": [2048, 8192, 1024]}, **changes)


async def test_a_red_cell_stops_the_campaign(fake: Fake) -> None:
    path = _red_grid(fake)
    async with fake.target(FAKE_VLLM_MAX_BATCHED_TOKENS="4096") as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [(o.cell, o.verdict) for o in result.ran] == [("mnbt2048", "green"), ("mnbt8192", "red")]
    assert result.stopped_early and "continue_on_red" in result.reason and boots(fake) == 2
    red = read_verdict(results(fake), "mnbt8192")
    assert red is not None and red.reason.startswith("boot failed: oom_cuda") and red.results == []
    assert read_verdict(results(fake), "mnbt1024") is None
    assert "is red" in campaign_status(path).next and processes_naming(fake.root) == []

    with pytest.raises(InputError, match=r"cell 'mnbt8192' is red .* delete .* or set continue_on_red: true"):
        await campaign_run(path, fake.target(), i_understand_this_submits_jobs=True)
    assert boots(fake) == 2


async def test_continue_on_red_runs_every_cell_and_the_red_one_is_never_champion(fake: Fake) -> None:
    path = _red_grid(fake, continue_on_red=True, replicates=0)
    async with fake.target(FAKE_VLLM_MAX_BATCHED_TOKENS="4096") as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [o.verdict for o in result.ran] == ["green", "red", "green"] and not result.stopped_early
    assert "red: mnbt8192" in result.reason and boots(fake) == 3
    champion = champion_select(path)
    assert [c.cell for c in champion.excluded] == ["mnbt8192"] and champion.champion != "mnbt8192"


async def test_failed_requests_make_a_cell_red(fake: Fake) -> None:
    # more than 256 prompt tokens in flight kill the fake server: concurrency 4 x 128 tokens does
    path = fake.write(grid=None, cells=[{"name": "only"}])
    async with fake.target(FAKE_VLLM_PREFILL_OOM_TOKENS="256") as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(results(fake), "only")
    assert result.ran[0].verdict == "red" and v is not None
    assert v.reason.startswith("concurrency 4: repeat 1:"), v.reason
    assert v.results[0].ok and not v.results[1].ok
    assert any("out of memory" in line for line in v.results[1].repeats[0].log_lines)
    assert "EngineDeadError" in (results(fake) / "cells" / "only" / "boot.log").read_text()
    assert processes_naming(fake.root) == []


async def test_an_sla_breach_makes_a_cell_red(fake: Fake) -> None:
    path = fake.write(sla={"median_tpot_ms": 1})  # the fake's TPOT is about 6 ms
    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert result.stopped_early and result.ran[0].reason.startswith("SLA at concurrency 1: median_tpot_ms 5.976 > 1")
    v = read_verdict(results(fake), "mnbt2048")
    assert v is not None and v.results[0].sla[0].model_dump() == {
        "metric": "median_tpot_ms",
        "limit": 1.0,
        "kind": "max",
        "value": pytest.approx(5.9757, abs=1e-3),
        "ok": False,
    }


# ---- resume after kill -9, cancellation, one runner at a time --------------------------------------------------------


def _runner(fake: Fake, path: Path, **engine_env: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.campaign.runner",
            str(path),
            str(fake.root / "target"),
            json.dumps({**fake.engine_env, **engine_env}),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(check, timeout_s: float = 60):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (value := check()) is not None:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _second_cell_started(fake: Fake):  # type: ignore[no-untyped-def]
    record = load_server(cells_of(results(fake)).server_file("mnbt2048"))
    return record if record is not None and record.rung_index == 2 else None


def _second_cell_benching(fake: Fake):  # type: ignore[no-untyped-def]
    warmed = (results(fake) / "cells" / "mnbt2048" / "warmup.json").exists()
    return _second_cell_started(fake) if warmed else None


@pytest.mark.parametrize(
    ("phase", "slow"), [("booting", {"FAKE_VLLM_BOOT_S": "3"}), ("benching", {"FAKE_VLLM_BENCH_S": "1"})]
)
async def test_a_killed_runner_resumes_after_its_last_finished_cell_and_leaves_no_server(
    fake: Fake,
    phase: str,
    slow: dict[str, str],
) -> None:
    path = fake.write(grid={"max_num_batched_tokens": [1024, 2048, 4096]}, replicates=0)
    runner = _runner(fake, path, **slow)
    try:  # kill -9 the runner in the second cell: its server is started and recorded
        record = _wait_for(lambda: (_second_cell_started if phase == "booting" else _second_cell_benching)(fake))
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.communicate(timeout=30)
    first = results(fake) / "cells" / "mnbt1024" / "verdict.yml"
    finished = first.read_bytes()
    assert read_verdict(results(fake), "mnbt2048") is None
    orphan = record.handle.locator.pid
    assert pid_running(orphan), "the killed runner's server should still be running until the resume stops it"
    assert campaign_status(path).running == ["mnbt2048"]

    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert not pid_running(orphan)
    assert result.skipped == ["mnbt1024"] and [o.cell for o in result.ran] == ["mnbt2048", "mnbt4096"]
    assert all(o.verdict == "green" for o in result.ran)
    assert first.read_bytes() == finished  # the finished cell was not run again
    assert boots(fake) == 4  # 1024, 2048 (killed), 2048 again, 4096
    assert cells_of(results(fake)).server_files() == []
    assert fake_servers(fake.port) == [] and wait_until_gone(fake.root) == []


@pytest.mark.parametrize(
    ("phase", "slow", "warmup"),
    [
        ("booting", {"FAKE_VLLM_BOOT_S": "30"}, 2),
        ("warming up", {"FAKE_VLLM_BENCH_S": "30"}, 2),
        ("concurrency 1", {"FAKE_VLLM_BENCH_S": "30"}, 0),
    ],
)
async def test_a_cancelled_campaign_leaves_no_server_and_no_verdict(
    fake: Fake, phase: str, slow: dict, warmup: int
) -> None:
    path = fake.write(warmup_requests=warmup)
    started = anyio.Event()

    async def progress(fraction: float, text: str) -> None:
        if phase in text and "mnbt2048" in text:
            started.set()

    async with fake.target(**slow) as target, anyio.create_task_group() as tg:
        tg.start_soon(lambda: campaign_run(path, target, i_understand_this_submits_jobs=True, progress=progress))
        with anyio.fail_after(60):
            await started.wait()
        await anyio.sleep(0.3)
        tg.cancel_scope.cancel()
    assert read_verdict(results(fake), "mnbt2048") is None
    assert cells_of(results(fake)).server_files() == []
    assert fake_servers(fake.port) == [] and processes_naming(fake.root) == []


async def test_one_runner_per_campaign(fake: Fake) -> None:
    path = fake.write()
    async with fake.target(FAKE_VLLM_BENCH_S="2") as target, anyio.create_task_group() as tg:
        tg.start_soon(lambda: campaign_run(path, target, i_understand_this_submits_jobs=True))
        with anyio.fail_after(30):
            while load_server(cells_of(results(fake)).server_file("mnbt2048")) is None:
                await anyio.sleep(0.05)
        with pytest.raises(InputError, match="another campaign_run is running this campaign"):
            await campaign_run(path, fake.target(), i_understand_this_submits_jobs=True)
        assert campaign_status(path).running == ["mnbt2048"]
        tg.cancel_scope.cancel()
    assert processes_naming(fake.root) == []


async def test_a_cell_whose_config_changed_since_its_verdict_is_not_skipped_silently(fake: Fake) -> None:
    path = fake.write(grid=None, cells=[{"name": "only"}])
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    fake.write(grid=None, cells=[{"name": "only", "max_num_batched_tokens": 1024}])
    with pytest.raises(InputError, match="cell 'only' has a verdict made with another serve config"):
        await campaign_run(path, fake.target(), i_understand_this_submits_jobs=True)
