"""Bad input for running rungs: each ends in one clear RedlineError (or, for an engine that
is not there, a failed rung routed to diagnose), leaves no process running and the ladder
file as it was.

The fake engine (tests/server/fake_vllm.py) stands for vLLM; the model folder is copied into
the test's tmp_path, so every process a rung could start names tmp_path on its command line
(the launcher's sh through the run folder, the engine through the model path).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from redline.errors import (
    InputError,
    RedlineError,
    TargetConfigError,
    TargetUnreachable,
)
from redline.ledger.ladder_file import load_ladder, read_ladder
from redline.models import BootStatus, Widening
from redline.ops.ladder.plan import ladder_init
from redline.ops.ladder.rung import climb, ladder_server, rung_run, smoke_test, stop_ladder_server
from redline.ops.requests import LadderInitRequest
from redline.targets import (
    LocalTarget,
    SSHSpec,
    SSHTarget,
    Target,
    load_targets,
    open_target,
)
from tests.conftest import processes_naming
from tests.server.helpers import FAKE_VLLM, LLAMA8B

pytestmark = pytest.mark.anyio
FAST_BOOT = {"FAKE_VLLM_KV_TOKENS": "100000", "FAKE_VLLM_BOOT_S": "0.2"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_targets(root: Path, engine_command: list[str] | None = None) -> Path:
    targets = {
        "targets": {
            "local": {
                "kind": "local",
                "workdir": str(root / "target"),
                "engine_command": engine_command or [sys.executable, str(FAKE_VLLM)],
                "env": FAST_BOOT,
            },
            "cpu-box": {"kind": "local", "workdir": str(root / "target")},
        }
    }
    path = root / "targets.yml"
    path.write_text(json.dumps(targets))  # JSON is YAML
    return path


def new_ladder(root: Path, model_path: str | None = None, widening: Widening | None = None, **changes) -> Path:
    """A ladder on the fake engine's model (copied under root), its servers on a port of their own."""
    if model_path is None:
        model = root / "models" / "llama8b"
        model.mkdir(parents=True, exist_ok=True)
        shutil.copy(LLAMA8B / "config.json", model / "config.json")
        model_path = str(model)
    path = root / "l8b.yml"
    ladder_init(
        path,
        LadderInitRequest(
            model="llama8b",
            model_path=model_path,
            floor_max_model_len=32768,
            floor_max_num_batched_tokens=8192,
            max_position_embeddings=131072,
            **{"fixed": {"port": free_port()}, **changes},
        ),
        widening=widening,
    )
    return path


def local_target(root: Path, engine_command: list[str] | None = None) -> Target:
    return open_target("local", load_targets(write_targets(root, engine_command)))


@pytest.fixture
async def stop_left_servers(tmp_path: Path) -> AsyncIterator[None]:
    """A booted rung stays up for its smoke test by design; stop it whatever the test did."""
    yield
    ladder = tmp_path / "l8b.yml"
    if ladder.exists() and ladder_server(ladder) is not None:
        await stop_ladder_server(ladder, LocalTarget("local", workdir=str(tmp_path / "target")))


def one_line(exc: pytest.ExceptionInfo[RedlineError]) -> str:
    text = str(exc.value)
    assert isinstance(exc.value, RedlineError) and text and "\n" not in text, repr(text)
    return text


# ---- the checker itself: it sees a server that is up --------------------------------------------


async def test_a_good_rung_boots_and_its_server_is_seen_until_stopped(tmp_path: Path, stop_left_servers) -> None:
    ladder = new_ladder(tmp_path)
    async with local_target(tmp_path) as target:
        outcome = await rung_run(ladder, target)
        assert outcome.rung.status is BootStatus.BOOT_OK
        assert ladder_server(ladder) is not None  # left up for its smoke test
        running = processes_naming(tmp_path)
        assert any(str(FAKE_VLLM) in p for p in running), running  # what the other tests show is absent
        assert await stop_ladder_server(ladder, target)
    assert processes_naming(tmp_path) == []


# ---- a target that is not in the targets file -----------------------------------------------------


async def test_unknown_target_name_lists_the_known_ones(tmp_path: Path) -> None:
    ladder = new_ladder(tmp_path)
    before = ladder.read_bytes()
    specs = load_targets(write_targets(tmp_path))
    with pytest.raises(TargetConfigError) as exc:
        open_target("gpu-1", specs)
    text = one_line(exc)
    assert "unknown target 'gpu-1'" in text
    assert "known targets: cpu-box, local" in text
    assert "targets file" in text  # where to add it
    assert ladder.read_bytes() == before
    assert processes_naming(tmp_path) == []


# ---- an SSH host nobody listens on ----------------------------------------------------------------


@pytest.mark.parametrize("model", ["path", "hub-id"])
async def test_unreachable_ssh_host_raises_before_anything_is_recorded(tmp_path: Path, model: str) -> None:
    # a model path is checked on the target first; a hub id goes straight to host_info: both need the host
    ladder = new_ladder(tmp_path, model_path=None if model == "path" else "meta-llama/Llama-3.1-8B")
    (tmp_path / "known_hosts").write_text("")
    port = free_port()  # bound and closed again: nothing listens there
    spec = SSHSpec(
        kind="ssh",
        host="127.0.0.1",
        port=port,
        user="redline",
        known_hosts=str(tmp_path / "known_hosts"),
        workdir=str(tmp_path / "remote"),
        connect_timeout_s=5,
    )
    before = files_under(tmp_path)
    async with SSHTarget("gpu-1", spec) as target:
        with pytest.raises(TargetUnreachable) as exc:
            await rung_run(ladder, target)
    text = one_line(exc)
    assert f"cannot reach 127.0.0.1:{port}" in text and "'gpu-1'" in text
    assert files_under(tmp_path) == before  # the ladder byte for byte, and no run folder, no server record
    assert load_ladder(ladder).rungs == [] and load_ladder(ladder).gpu is None
    assert processes_naming(tmp_path) == []


# ---- a model path that is not on the target -------------------------------------------------------


@pytest.mark.parametrize("form", ["absolute", "relative", "home"])
async def test_missing_model_path_is_refused_before_any_boot(tmp_path: Path, form: str, stop_left_servers) -> None:
    missing = {
        "absolute": str(tmp_path / "models" / "no-such-model"),
        "relative": f"./no-such-model-{tmp_path.name}",
        "home": f"~/no-such-model-{tmp_path.name}",
    }[form]
    ladder = new_ladder(tmp_path, model_path=missing)
    target = local_target(tmp_path)
    before = files_under(tmp_path)
    async with target:
        with pytest.raises(InputError) as exc:
            await rung_run(ladder, target)
    text = one_line(exc)
    assert text.startswith(f"model path {missing} does not exist on target local: fix the ladder's model path")
    assert files_under(tmp_path) == before  # no rung, no host info, no run folder
    assert not (tmp_path / "target").exists()  # nothing was started
    assert processes_naming(tmp_path) == []


async def test_missing_model_path_stops_a_climb_too(tmp_path: Path, stop_left_servers) -> None:
    ladder = new_ladder(tmp_path, model_path=str(tmp_path / "gone"))
    before = ladder.read_bytes()
    async with local_target(tmp_path) as target:
        with pytest.raises(InputError) as exc:
            await climb(ladder, target)
    assert str(tmp_path / "gone") in one_line(exc)
    assert ladder.read_bytes() == before
    assert processes_naming(tmp_path) == []


async def test_a_hub_id_is_not_checked_as_a_path(tmp_path: Path) -> None:
    class Recording(LocalTarget):
        calls: list[list[str]]

        async def run(self, argv, **kwargs):
            self.calls.append(argv)
            return await super().run(argv, **kwargs)

    ladder = new_ladder(tmp_path, model_path="meta-llama/Llama-3.1-8B")
    target = Recording("local", workdir=str(tmp_path / "target"))
    target.calls = []
    target.engine_commands = {"vllm": ["/nonexistent/vllm"]}  # the boot fails at once; no server to stop
    outcome = await rung_run(ladder, target)
    assert not any(argv[:2] == ["test", "-e"] for argv in target.calls)
    assert outcome.rung.serve.model == "meta-llama/Llama-3.1-8B"  # it went on to boot
    assert processes_naming(tmp_path) == []


# ---- a flag that is not a flag ----------------------------------------------------------------------


@pytest.mark.parametrize("flags", [["--ok", "; rm -rf /"], ["-x"]], ids=["shell-text", "short-flag"])
async def test_extra_flag_that_is_not_a_flag_is_refused_and_no_ladder_is_made(tmp_path: Path, flags: list[str]) -> None:
    with pytest.raises(ValidationError) as exc:  # refused as the request is made
        new_ladder(tmp_path, fixed={"port": free_port(), "extra_flags": flags})
    text = str(exc.value)
    assert f"extra flag {flags[-1]!r} is not an engine flag" in text
    assert "--name or --name=value" in text  # how to write it
    assert not (tmp_path / "l8b.yml").exists()
    assert list(tmp_path.glob("l8b.yml*")) == []
    assert processes_naming(tmp_path) == []


# ---- an engine command that is not on the target ----------------------------------------------------


async def test_missing_engine_command_is_a_failed_rung_routed_to_diagnose(tmp_path: Path, stop_left_servers) -> None:
    ladder = new_ladder(tmp_path)
    async with local_target(tmp_path, engine_command=["/nonexistent/vllm"]) as target:
        outcome = await rung_run(ladder, target)
    rung = outcome.rung
    assert rung.status is not BootStatus.BOOT_OK and rung.status.value.startswith("crash_")
    assert "/nonexistent/vllm" in rung.reason
    assert outcome.next.route == "diagnose"
    assert [r.status for r in load_ladder(ladder).rungs] == [rung.status]  # recorded, once
    assert ladder_server(ladder) is None  # no server left for a smoke test
    assert processes_naming(tmp_path) == []


async def test_climb_with_a_missing_engine_stops_at_diagnose_after_one_rung(tmp_path: Path, stop_left_servers) -> None:
    ladder = new_ladder(tmp_path)
    async with local_target(tmp_path, engine_command=["/nonexistent/vllm"]) as target:
        report = await climb(ladder, target)
    assert report.final.route == "diagnose"
    assert len(report.steps) == 1 and "/nonexistent/vllm" in report.steps[0]
    assert len(load_ladder(ladder).rungs) == 1  # not retried blindly
    assert processes_naming(tmp_path) == []


# ---- calls out of order -------------------------------------------------------------------------------


async def test_smoke_test_before_any_boot_is_refused(tmp_path: Path) -> None:
    ladder = new_ladder(tmp_path)
    before = ladder.read_bytes()
    async with local_target(tmp_path) as target:
        with pytest.raises(RedlineError) as exc:
            await smoke_test(ladder, target)
    assert "next step is run_rung, not a smoke test" in one_line(exc)
    assert ladder.read_bytes() == before
    assert processes_naming(tmp_path) == []


async def test_stop_server_on_another_target_is_refused_and_the_server_kept(tmp_path: Path, stop_left_servers) -> None:
    ladder = new_ladder(tmp_path)
    async with local_target(tmp_path) as target:
        await rung_run(ladder, target)
    before = ladder.read_bytes()
    other = open_target("cpu-box", load_targets(tmp_path / "targets.yml"))
    with pytest.raises(RedlineError) as exc:
        await stop_ladder_server(ladder, other)
    text = one_line(exc)
    assert "runs on target 'local', not 'cpu-box'" in text
    assert ladder_server(ladder) is not None  # still recorded, so the right target can stop it
    assert ladder.read_bytes() == before
    assert processes_naming(tmp_path) != []  # refused means untouched: the server is still up
    async with local_target(tmp_path) as target:
        assert await stop_ladder_server(ladder, target)
    assert processes_naming(tmp_path) == []


# ---- hardening class 1: a widening is on purpose, and every rung it touches says so ---------------


async def test_code_execution_through_knobs_a_widened_flag_is_refused_at_init_and_recorded_when_widened(
    tmp_path: Path, stop_left_servers
) -> None:
    fixed = {"port": free_port(), "extra_flags": ["--enable-sleep-mode"]}
    with pytest.raises(InputError, match="enable_sleep_mode.*not a serving lever"):
        new_ladder(tmp_path, fixed=fixed)
    assert not (tmp_path / "l8b.yml").exists()
    widening = Widening(flags=["--enable-sleep-mode"])
    ladder = new_ladder(tmp_path, fixed=fixed, widening=widening)
    async with local_target(tmp_path) as target:
        with pytest.raises(InputError, match="enable_sleep_mode"):
            await rung_run(ladder, target)  # the server config's widening is not the ladder's to assume
        outcome = await rung_run(ladder, target, widening=widening)
    assert outcome.rung.widened == ["flag --enable-sleep-mode (enable_sleep_mode)"]
    assert read_ladder(ladder).rungs[0].widened == outcome.rung.widened
