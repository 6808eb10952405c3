"""What a server's environment holds so its prefix cache can be emptied between benches (docs/security.md, class
31.1): vLLM's dev mode only where benches follow on a server listening on loopback alone, the target's env winning;
and what a bench's record says when the reset is not served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.errors import TargetConfigError
from redline.models import ServeConfig
from redline.ops.session import ServeSession
from redline.targets import LocalTarget
from redline.targets.config import load_targets, open_target
from tests.targets.memory_target import MemoryTarget

DEV = {"VLLM_SERVER_DEV_MODE": "1"}


def _env(host: str, benches: bool, engine: str = "vllm", **target_env: str) -> dict[str, str]:
    session = ServeSession(LocalTarget("gpu", engine_env=target_env), get_engine(engine))
    return session.launch_env(ServeConfig(model="/m", max_model_len=1024, host=host), benches)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_dev_mode_is_set_for_benches_on_a_server_listening_on_loopback_alone(host: str) -> None:
    assert _env(host, benches=True) == DEV
    assert _env(host, benches=False) == {}  # a ladder's rung: no ranked bench follows


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5"])
def test_dev_mode_is_never_set_on_a_server_others_can_reach(host: str) -> None:
    assert _env(host, benches=True) == {}


def test_dev_mode_is_off_where_the_target_env_says_so_and_sglang_needs_none() -> None:
    assert _env("127.0.0.1", benches=True, VLLM_SERVER_DEV_MODE="0") == {"VLLM_SERVER_DEV_MODE": "0"}
    assert _env("127.0.0.1", benches=True, engine="sglang") == {}  # SGLang serves /flush_cache always
    assert get_engine("sglang").cache_reset_url(ServeConfig(model="/m", max_model_len=8, port=30000)) == (
        "http://127.0.0.1:30000/flush_cache"
    )


@pytest.mark.anyio
async def test_dev_mode_a_reset_the_server_does_not_serve_is_said_with_its_fix() -> None:
    target = MemoryTarget()  # answers only GET /metrics: a server without dev mode
    target.dev_mode = True  # as a targets file's `dev_mode: true` says
    session = ServeSession(target, get_engine("vllm"))
    config = ServeConfig(model="/m", max_model_len=1024, port=8123)
    boot = await session.boot(config, 60, benches=True)
    emptied, said = await session.empty_prefix_cache(boot.handle, config)
    assert not emptied and said == (
        "not emptied before the bench (POST http://127.0.0.1:8123/reset_prefix_cache: no 200 answer; vLLM serves "
        "it only with VLLM_SERVER_DEV_MODE=1, which redline set)"
    )
    await session.stop(boot.handle)


@pytest.mark.anyio
async def test_dev_mode_off_on_a_target_others_reach_is_never_asked_for_and_said() -> None:
    target = MemoryTarget()  # not local: its kind's default is off
    session = ServeSession(target, get_engine("vllm"))
    config = ServeConfig(model="/m", max_model_len=1024, port=8123)
    assert session.launch_env(config, benches=True) == {}
    boot = await session.boot(config, 60, benches=True)
    emptied, said = await session.empty_prefix_cache(boot.handle, config)
    assert not emptied and said == (
        "not emptied before the bench (VLLM_SERVER_DEV_MODE=1 is off: target local's engine port is reached by "
        "others than redline (its kind's default; dev_mode: true in the targets file turns it on there, "
        "docs/security.md 38.1))"
    )
    assert target.posts == []  # never asked
    await session.stop(boot.handle)


@pytest.mark.parametrize(
    ("kind", "extra", "on"),
    [
        ("local", {}, True),
        ("local", {"dev_mode": False}, False),
        ("ssh", {"host": "gpu1", "user": "u"}, False),
        ("ssh", {"host": "gpu1", "user": "u", "dev_mode": True}, True),
        ("slurm", {"partition": "gpu"}, False),
        ("slurm", {"partition": "gpu", "dev_mode": True}, True),
        ("kubernetes", {"image": "vllm/vllm-openai"}, False),
        ("kubernetes", {"image": "vllm/vllm-openai", "dev_mode": True}, True),
    ],
)
def test_dev_mode_is_on_by_default_only_for_local_targets_and_a_targets_file_opts_in(
    kind: str, extra: dict[str, object], on: bool, tmp_path: Path
) -> None:
    targets = tmp_path / "targets.yml"
    targets.write_text(json.dumps({"targets": {"t": {"kind": kind, **extra}}}))
    target = open_target("t", load_targets(targets))
    assert target.dev_mode is on
    session = ServeSession(target, get_engine("vllm"))
    assert session.launch_env(ServeConfig(model="/m", max_model_len=1024), benches=True) == (DEV if on else {})


def test_dev_mode_on_a_helm_chart_that_takes_no_env_is_refused_and_off_it_needs_none(tmp_path: Path) -> None:
    helm = {"chart": "/charts/vllm", "argv_path": "server.command", "labels_path": "server.podLabels"}
    targets = tmp_path / "targets.yml"
    entry = {"kind": "kubernetes", "deploy": "helm", "helm": helm}
    targets.write_text(json.dumps({"targets": {"t": {**entry, "dev_mode": True}}}))
    with pytest.raises(TargetConfigError, match="dev_mode: true sets the engine's env .* but this chart takes none"):
        load_targets(targets)
    targets.write_text(json.dumps({"targets": {"t": entry}}))
    session = ServeSession(open_target("t", load_targets(targets)), get_engine("vllm"))
    assert session.launch_env(ServeConfig(model="/m", max_model_len=1024), benches=True) == {}


@pytest.mark.parametrize(
    ("answer", "done"), [('{"success":true}', True), ('{"success":false}', False), ("<html>", False), ("[]", False)]
)
def test_dev_mode_vllm_s_reset_is_done_only_when_it_says_success(answer: str, done: bool) -> None:
    assert get_engine("vllm").cache_reset_done(answer) is done
