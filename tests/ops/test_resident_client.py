"""The resident bench client (ops/resident.py) for real: the fake engine as a `vllm` package
(tests/server/fake_vllm_pkg, run as `python -m vllm`) through the real LocalTarget, so its Python is found and its
`vllm.benchmarks.serve` is imported once per server. Every bench of a cell goes to the one client started while the
cell's server boots and stopped with it; where no Python can be found behind the engine command, every bench
starts a client of its own and the trial says why. The real vLLM CPU build's own client runs resident in
tests/server/test_real_vllm_agent_workflow.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.ledger.campaign_file import read_verdict
from redline.models import BenchWorkload, ServeConfig
from redline.ops.campaign.run import campaign_run
from redline.ops.session import ServeSession
from redline.targets import LocalTarget
from tests.campaign.helpers import Fake, make_fake, wait_until_gone

pytestmark = pytest.mark.anyio
PACKAGE = Path(__file__).resolve().parents[1] / "server" / "fake_vllm_pkg"
CELLS = ("mnbt2048", "mnbt8192")


def as_package(fake: Fake, **env: str) -> LocalTarget:
    """The fake engine as `python -m vllm`: a command whose Python redline can find."""
    return LocalTarget(
        "local",
        workdir=str(fake.root / "target"),
        engine_command=[sys.executable, "-m", "vllm"],
        engine_env={**fake.engine_env, "PYTHONPATH": str(PACKAGE), **env},
    )


WORKLOAD = BenchWorkload(input_len=128, output_len=16, num_prompts=8, concurrency=4)


def serve(fake: Fake) -> ServeConfig:
    return ServeConfig(model=str(fake.model), max_model_len=4096, max_num_seqs=4, port=fake.port)


def clients(fake: Fake) -> list[Path]:
    return sorted(p.parent for p in (fake.root / "target" / "runs").glob("*/client.log"))


async def test_every_bench_of_a_cell_goes_to_one_resident_client_stopped_with_its_server(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    path = fake.write(replicates=0)
    async with as_package(fake) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [(o.cell, o.verdict) for o in result.ran] == [(c, "green") for c in CELLS]
    folders = clients(fake)
    assert len(folders) == 2  # one client per cell's server, not one per bench
    for private in (fake.root / "target", fake.root / "target" / "runs"):  # its requests and answers: the user's alone
        assert private.stat().st_mode & 0o777 == 0o700, private
    for folder in folders:  # the warm-up and the two benches, in order, each ended 0
        ready = json.loads((folder / "ready.json").read_text())
        assert ready["version"] == "0.26.0" and ready["import_s"] >= 0
        done = [json.loads((folder / f"{n:05d}.done").read_text()) for n in (1, 2, 3)]
        assert [d["returncode"] for d in done] == [0, 0, 0] and not (folder / "00004.json").exists()
    for cell in CELLS:
        v = read_verdict(fake.campaigns / "c1", cell)
        assert v is not None
        trials = [t for r in v.results for t in r.repeats]
        assert len(trials) == 2 and all(
            t.figures is not None and t.figures.completed == t.figures.num_prompts for t in trials
        )
        assert all(
            t.client is not None and t.client.startswith("resident vLLM bench client 0.26.0 (imported once")
            for t in trials
        )
    assert wait_until_gone(fake.root) == []  # every client ended with its server


async def test_a_bench_past_its_deadline_stops_the_client_and_is_exit_124(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    path = fake.write(grid={"max_num_batched_tokens": [8192]}, warmup_requests=0, bench_deadline_s=1)
    async with as_package(fake, FAKE_VLLM_BENCH_S="5") as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.verdict == "red"
    first = v.results[0].repeats[0]
    assert first.exit_code == 124 and "did not finish within 1s" in " ".join(first.log_lines)
    assert wait_until_gone(fake.root) == []


async def test_a_bench_after_one_past_its_deadline_gets_a_client_of_its_own_again(tmp_path: Path) -> None:
    """The loop stops a cell at its first failed bench, but the client does not lean on that: the one a deadline
    stopped is never handed the next bench (it would answer "ended", not the bench's own outcome)."""
    fake = make_fake(tmp_path)
    config = serve(fake)
    async with as_package(fake, FAKE_VLLM_BENCH_S="5") as target:
        session = ServeSession(target, get_engine("vllm"))
        boot = await session.boot(config, 60)
        try:
            for name in ("a.json", "b.json"):
                run = await session.bench(boot.handle, config, WORKLOAD, name, deadline_s=1)
                assert run.run.returncode == 124 and "did not finish within 1s" in run.run.stderr, run.run
            assert len(clients(fake)) == 2  # a new client for the second bench
        finally:
            await session.stop(boot.handle)
    assert wait_until_gone(fake.root) == []


async def test_where_no_python_is_found_each_bench_starts_its_own_client_and_says_why(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    path = fake.write(grid={"max_num_batched_tokens": [8192]})
    async with fake.target() as target:  # `python fake_vllm.py`: a script named after its interpreter
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.verdict == "green" and clients(fake) == []
    said = {t.client or "" for r in v.results for t in r.repeats}
    assert len(said) == 1 and said.pop().startswith("a bench client of its own (no Python found behind")


async def test_a_server_left_up_by_another_call_is_benched_by_a_client_of_its_own(tmp_path: Path) -> None:
    """A ladder's smoke test benches a server rung_run left up and stops nothing: a client kept resident there would
    outlive the call, so the session that did not boot the server keeps none."""
    fake = make_fake(tmp_path)
    config = serve(fake)
    async with as_package(fake) as target:
        booting = ServeSession(target, get_engine("vllm"))
        boot = await booting.boot(config, 60)
        assert boot.ready
        try:
            run = await ServeSession(target, get_engine("vllm")).bench(
                boot.handle, config, WORKLOAD, "s.json", deadline_s=60
            )
            assert run.run.returncode == 0 and run.client == "a bench client of its own" and clients(fake) == []
            run = await booting.bench(boot.handle, config, WORKLOAD, "b.json", deadline_s=60)
            assert run.client.startswith("resident vLLM bench client") and len(clients(fake)) == 1
        finally:
            await booting.stop(boot.handle)
    assert wait_until_gone(fake.root) == []


async def test_a_server_whose_benches_follow_gets_its_client_while_it_boots(tmp_path: Path) -> None:
    """The client imports while the server boots (3 s here), so the server's first bench waits for no import, and
    the boot's time is the server's own, not the client's."""
    fake = make_fake(tmp_path)
    config = serve(fake)
    async with as_package(fake, FAKE_VLLM_BOOT_S="3") as target:
        session = ServeSession(target, get_engine("vllm"))
        boot = await session.boot(config, 60, benches=True)
        try:
            assert boot.ready and len(clients(fake)) == 1 and 3 <= boot.boot_s < 10
            imported = (clients(fake)[0] / "ready.json").stat().st_mtime
            assert imported < boot.ended_at.timestamp() - 1  # ready before the server was: imported during the boot
            run = await session.bench(boot.handle, config, WORKLOAD, "b.json", deadline_s=60)
            assert run.client.startswith("resident vLLM bench client") and len(clients(fake)) == 1
        finally:
            await session.stop(boot.handle)
    assert wait_until_gone(fake.root) == []


async def test_a_boot_that_fails_stops_the_client_started_beside_it(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    config = serve(fake)
    async with as_package(fake, FAKE_VLLM_BOOT_S="30") as target:
        session = ServeSession(target, get_engine("vllm"))
        boot = await session.boot(config, 2, benches=True)  # the server is not ready within 2 s
        assert not boot.ready and session.clients.open == {}
    assert wait_until_gone(fake.root) == []
