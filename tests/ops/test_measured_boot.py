"""The one measured-boot loop (ops/measured_boot.py) and the one workload policy (policy/workload.py), on the
in-memory target (tests/targets/memory_target.py): what is tested is the loop's routing and recording, which no
real process adds to (campaign cells and A/B trials run it on the fake engine's real processes in the slow lane).

Campaign cells and A/B trials both run measured_boot over policy/workload's steps: the same workload gives the
same benches in both (the 2 x c prompt gate included), and the loop records its server while it runs, stops at a
failed warm-up, and leaves nothing behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.ledger.server_record import load_server
from redline.models import ServeConfig
from redline.models.workloads import Load, WorkloadAt, WorkloadSpec
from redline.ops.ab.run import ab_run
from redline.ops.campaign.plan import campaign_plan
from redline.ops.measured_boot import Keep, measured_boot
from redline.ops.session import ServeSession
from redline.policy.workload import boot_benches
from tests.campaign.helpers import Fake, make_fake
from tests.rigor.helpers import ab_spec
from tests.targets.memory_target import MemoryTarget

pytestmark = pytest.mark.anyio

SHORT = {"input_len": 128, "output_len": 16, "num_prompts": 40}  # 40 prompts: under 2 x c at c=32


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


async def test_an_ab_and_a_campaign_bench_the_same_workload_alike_with_the_2c_gate_applied_and_said(
    fake: Fake, tmp_path: Path
) -> None:
    spec = ab_spec(fake, workload=SHORT, concurrencies=[4, 32])
    ab = await ab_run(tmp_path / "ws", spec, MemoryTarget(), i_understand_this_submits_jobs=False, dry_run=True)
    assert ab.plan is not None
    note = "concurrency 32: num_prompts 40 raised to 64"
    assert any(note in g for g in ab.plan.gates) and all(any(note in g for g in a.gates) for a in ab.plan.arms)
    trial = ab.plan.trials[0]
    assert [_flag(b, "--num-prompts") for b in trial.bench_commands] == ["40", "64"]

    path = fake.write(workload=SHORT, concurrencies=[4, 32], grid={"max_num_batched_tokens": [2048, 8192]})
    cell = campaign_plan(path, target=MemoryTarget()).cells[0]
    assert any(note in g for g in cell.gates)
    assert [_flag(b.command, "--num-prompts") for b in cell.benches] == ["40", "64"]
    same = ("--num-prompts", "--max-concurrency", "--seed", "--random-input-len", "--random-output-len")
    ab_benches = [[_flag(b, f) for f in same] for b in trial.bench_commands]
    assert ab_benches == [[_flag(b.command, f) for f in same] for b in cell.benches]
    assert cell.warmup_command is not None and trial.warmup_command is not None
    assert [_flag(cell.warmup_command, f) for f in same] == [_flag(trial.warmup_command, f) for f in same]


def _config(fake: Fake) -> ServeConfig:
    return ServeConfig(model=str(fake.model), max_model_len=4096, max_num_seqs=4, port=fake.port)


async def test_a_measured_boot_runs_every_step_keeps_its_record_while_it_runs_and_leaves_nothing(fake: Fake) -> None:
    steps = boot_benches(
        [WorkloadAt(None, WorkloadSpec(input_len=128, output_len=16), [Load(concurrency=1), Load(concurrency=4)])],
        2,
        repeats=2,
    )
    record_file = fake.root / "results" / "run" / "server.json"
    record_file.parent.mkdir(parents=True)
    written: dict[str, str] = {}
    seen_records: list[int] = []

    def write(name: str, text: str) -> None:
        written[name] = text
        record = load_server(record_file)  # while a step runs, its server is on record
        seen_records.append(record.boot_log_bytes if record is not None else -1)

    target = MemoryTarget()
    session = ServeSession(target, get_engine("vllm"))
    measured = await measured_boot(
        session, _config(fake), steps, keep=Keep(record_file, 7, write), boot_deadline_s=60, bench_deadline_s=60
    )
    assert measured.boot.ready and measured.warmup_error is None
    assert [r.bench.result_name for r in measured.outcomes] == [
        "warmup.json",
        "bench-c1-t1.json",
        "bench-c4-t1.json",
        "bench-c1-t2.json",
        "bench-c4-t2.json",
    ]
    assert [r.warm for r in measured.outcomes] == [False, True, True, True, True]
    assert all(r.problem is None and r.figures is not None for r in measured.outcomes)
    assert sorted(written) == sorted(r.bench.result_name for r in measured.outcomes)
    assert all(n > 0 for n in seen_records)  # the record names where the boot ended in the log
    assert measured.log_text.startswith(measured.boot.log_text) and len(measured.log_text) > len(measured.boot.log_text)
    assert load_server(record_file) is None and not record_file.exists()
    assert target.stopped == target.started and len(target.started) == 1 and not target.alive  # one boot, stopped
    assert [_flag(b, "--result-filename") for b in target.benches] == [r.bench.result_name for r in measured.outcomes]


async def test_a_failed_warm_up_ends_the_boot_with_no_bench_and_stops_the_server(fake: Fake) -> None:
    steps = boot_benches(
        [WorkloadAt(None, WorkloadSpec(input_len=128, output_len=16), [Load(concurrency=1), Load(concurrency=4)])],
        2,
        repeats=1,
    )
    record_file = fake.root / "results" / "server.json"
    record_file.parent.mkdir(parents=True)
    target = MemoryTarget(failing=frozenset({"warmup.json"}))  # no warm-up request gets through
    session = ServeSession(target, get_engine("vllm"))
    measured = await measured_boot(
        session,
        _config(fake),
        steps,
        keep=Keep(record_file, 1, lambda *_: None),
        boot_deadline_s=60,
        bench_deadline_s=60,
    )
    assert measured.boot.ready and measured.benches == []
    assert measured.warmup_error == "2 of 2 requests failed (completed 0)" and len(measured.outcomes) == 1
    assert len(target.benches) == 1  # no bench after the warm-up
    assert not record_file.exists() and target.stopped == target.started and not target.alive


@pytest.mark.parametrize(("cached", "other_client"), [(0.0, 0), (0.3, 0), (0.3, 1000)])
async def test_every_ranked_bench_is_checked_from_the_server_s_metrics_and_a_warm_cache_is_its_problem(
    fake: Fake, cached: float, other_client: int
) -> None:
    steps = boot_benches(
        [WorkloadAt(None, WorkloadSpec(input_len=128, output_len=16), [Load(concurrency=1), Load(concurrency=4)])],
        2,
        repeats=1,
    )
    record_file = fake.root / "results" / "server.json"
    record_file.parent.mkdir(parents=True)
    target = MemoryTarget(cached=cached, other_client=other_client)  # dev mode off: not local
    measured = await measured_boot(
        ServeSession(target, get_engine("vllm")),
        _config(fake),
        steps,
        keep=Keep(record_file, 1, lambda *_: None),
        boot_deadline_s=60,
        bench_deadline_s=60,
    )
    warmup, *benches = measured.outcomes
    assert warmup.checks == [] and warmup.problem is None  # a warm-up is never ranked, so never checked
    assert len(benches) == 2  # a flagged bench leaves the server usable: the next one runs
    for r, prompts in zip(benches, ("512", "2,048"), strict=True):  # 4 x 128 and 16 x 128 prompt tokens
        assert [c.check for c in r.checks] == ["prefix_cache", "client", "window", "figures", "gpu", "gpu_health"]
        said = r.checks[0].said  # this target asks for no reset: each bench says so
        assert said.startswith("prefix cache not emptied before the bench (VLLM_SERVER_DEV_MODE=1 is off: ")
        found = cached * int(prompts.replace(",", "")) / (int(prompts.replace(",", "")) + other_client)
        assert f"): {found:.1%} of " in said and "prompt tokens were found in it" in said
        # its own prompts' repeats are told from a cache another client's requests warmed
        assert (r.problem is None) is (other_client == 0)
        assert r.checks[0].clean_by == ("fresh prompts" if other_client == 0 else None)
        if other_client:
            assert r.problem == r.checks[0].said and "not ranked" in r.problem
