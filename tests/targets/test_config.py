"""The targets file: strict shapes, paths resolved against the file, clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from redline.errors import InputError, TargetConfigError
from redline.targets import (
    KINDS,
    LocalSpec,
    LocalTarget,
    SSHSpec,
    SSHTarget,
    Target,
    TargetSpec,
    load_targets,
    open_target,
)

GOOD = """\
targets:
  local: {kind: local}
  gpu1:
    kind: ssh
    host: 10.0.0.5
    user: ubuntu
    key_file: keys/id_ed25519
    known_hosts: ~/.ssh/known_hosts
    workdir: /tmp/redline
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conf" / "targets.yml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_load_targets_reads_both_kinds_and_resolves_paths(tmp_path: Path) -> None:
    specs = load_targets(write(tmp_path, GOOD))
    assert specs["local"] == LocalSpec(kind="local")
    gpu = specs["gpu1"]
    assert isinstance(gpu, SSHSpec) and (gpu.host, gpu.port, gpu.user) == ("10.0.0.5", 22, "ubuntu")
    assert gpu.key_file == str(tmp_path / "conf" / "keys" / "id_ed25519")  # relative: the file's folder
    assert gpu.known_hosts == str(Path.home() / ".ssh" / "known_hosts")  # ~ is the user's home


def test_relative_known_hosts_and_local_workdir_resolve_against_the_file(tmp_path: Path) -> None:
    text = "targets:\n  a: {kind: ssh, host: h, user: u, known_hosts: kh}\n  b: {kind: local, workdir: runs}\n"
    specs = load_targets(write(tmp_path, text))
    assert specs["a"].known_hosts == str(tmp_path / "conf" / "kh")  # type: ignore[union-attr]
    assert specs["b"].workdir == str(tmp_path / "conf" / "runs")


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("targets:\n  a: {kind: ssh, host: h, user: u, pasword: x}\n", "pasword"),
        ("targets:\n  a: {kind: local, host: h}\n", "host"),
        ("targets:\n  a: {kind: k8s}\n", "kind"),
        ("targets:\n  a: {kind: ssh, user: u}\n", "host"),
        ("targets:\n  a: {kind: ssh, host: h, user: u, workdir: tmp}\n", "absolute"),
        ("targets:\n  a: {kind: ssh, host: -oProxyCommand=x, user: u}\n", "host"),
        ("targets:\n  a: {kind: ssh, host: h, user: u, port: 70000}\n", "port"),
        ("targets:\n  'bad name': {kind: local}\n", "bad name"),
        ("target:\n  a: {kind: local}\n", "target"),
        ("targets:\n  a: {kind: local}\n  a: {kind: local}\n", "duplicate"),
        ("targets: [unclosed\n", "YAML"),
    ],
)
def test_bad_targets_files_are_refused_with_the_reason(tmp_path: Path, text: str, complaint: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TargetConfigError, match=complaint) as err:
        load_targets(path)
    assert str(path) in str(err.value)
    assert isinstance(err.value, InputError)  # the caller can fix it


def test_missing_targets_file(tmp_path: Path) -> None:
    with pytest.raises(TargetConfigError, match="cannot read targets file"):
        load_targets(tmp_path / "absent.yml")


def test_open_target_builds_the_named_kind(tmp_path: Path) -> None:
    specs = load_targets(write(tmp_path, GOOD))
    local, gpu = open_target("local", specs), open_target("gpu1", specs)
    assert isinstance(local, LocalTarget) and local.name == "local"
    assert isinstance(gpu, SSHTarget) and gpu.spec == specs["gpu1"] and gpu.connect_count == 0  # lazy


def test_unknown_target_name_lists_the_known_ones(tmp_path: Path) -> None:
    specs = load_targets(write(tmp_path, GOOD))
    with pytest.raises(TargetConfigError, match=r"unknown target 'gpu2'; known targets: gpu1, local"):
        open_target("gpu2", specs)


def test_engine_command_and_env_reach_the_target(tmp_path):
    from redline.targets import load_targets, open_target

    path = tmp_path / "targets.yml"
    path.write_text(
        "targets:\n  cpu:\n    kind: local\n    engine_command: [.venv-vllm/bin/vllm]\n"
        "    env: {VLLM_CPU_KVCACHE_SPACE: '1'}\n"
    )
    target = open_target("cpu", load_targets(path))
    assert target.engine_command("vllm", ["vllm"]) == [str(tmp_path / ".venv-vllm/bin/vllm")]
    assert target.engine_env == {"VLLM_CPU_KVCACHE_SPACE": "1"}


def test_engine_command_resolution_order(tmp_path: Path) -> None:
    """Per engine first, then the older one-command form, then the engine's own default."""
    path = write(
        tmp_path,
        """\
targets:
  both: {kind: local, engine_commands: {vllm: [/opt/vllm/bin/vllm], sglang: [python3, -m, sglang.launch_server]},
         engine_command: [bin/any-engine, --flag]}
  legacy: {kind: ssh, host: h, user: u, engine_command: [/opt/venv/bin/vllm]}
  plain: {kind: local}
""",
    )
    specs = load_targets(path)
    both, legacy, plain = (open_target(name, specs) for name in ("both", "legacy", "plain"))
    assert both.engine_command("vllm", ["vllm"]) == ["/opt/vllm/bin/vllm"]
    assert both.engine_command("sglang", ["sglang"]) == ["python3", "-m", "sglang.launch_server"]
    # a local path in the older form travels with the file; a bare word stays on PATH
    assert both.engine_command("trtllm", ["trtllm-serve"]) == [str(tmp_path / "conf" / "bin/any-engine"), "--flag"]
    assert legacy.engine_command("sglang", ["python3"]) == ["/opt/venv/bin/vllm"]  # a remote path: kept as is
    assert plain.engine_command("vllm", ["vllm"]) == ["vllm"]
    plain.engine_command("vllm", ["vllm"]).append("x")  # a copy: callers cannot change the target
    assert plain.engine_command("vllm", ["vllm"]) == ["vllm"]
    assert specs["plain"].engine_command is None and specs["plain"].engine_commands == {}


@pytest.mark.parametrize(
    "entry",
    [
        "{kind: local, engine_command: []}",
        "{kind: local, engine_commands: {'Bad Name': [x]}}",
        "{kind: local, engine_commands: {vllm: ['']}}",
    ],
)
def test_bad_engine_commands_are_refused(tmp_path: Path, entry: str) -> None:
    with pytest.raises(TargetConfigError, match="engine_command"):
        load_targets(write(tmp_path, f"targets:\n  a: {entry}\n"))


# The smallest entry of each kind; a kind added to the registry needs a line here.
MINIMAL = {
    "local": "{kind: local}",
    "ssh": "{kind: ssh, host: h, user: u}",
    "kubernetes": "{kind: kubernetes, image: busybox}",
    "slurm": "{kind: slurm, partition: gpu}",
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_registered_kind_parses_and_opens_from_a_targets_file(tmp_path: Path, kind: str) -> None:
    assert kind in MINIMAL, f"add a minimal {kind!r} entry to MINIMAL"
    specs = load_targets(write(tmp_path, f"targets:\n  t: {MINIMAL[kind]}\n"))
    assert type(specs["t"]) is KINDS[kind].spec and specs["t"].kind == kind
    target = open_target("t", specs)
    assert isinstance(target, Target) and target.name == "t"


def test_the_registry_and_the_spec_union_agree() -> None:
    assert set(get_args(get_args(TargetSpec)[0])) == {kind.spec for kind in KINDS.values()}


def test_env_names_in_the_targets_file_are_checked(tmp_path):
    import pytest

    from redline.errors import TargetConfigError
    from redline.targets import load_targets

    path = tmp_path / "targets.yml"
    path.write_text("targets:\n  cpu: {kind: local, env: {'A;B': x}}\n")
    with pytest.raises(TargetConfigError):
        load_targets(path)


@pytest.mark.parametrize("kind", ["local: {kind: local", "gpu: {kind: ssh, host: h, user: u, known_hosts: k"])
def test_a_target_says_whether_its_compile_cache_persists_and_a_fresh_one_does_not(tmp_path: Path, kind: str) -> None:
    name = kind.split(":")[0]
    kept = load_targets(write(tmp_path, f"targets:\n  {kind}, compile_cache_persists: true}}\n"))
    assert open_target(name, kept).compile_cache_persists is True
    fresh = load_targets(write(tmp_path, f"targets:\n  {kind}}}\n"))
    assert open_target(name, fresh).compile_cache_persists is False


def test_compile_cache_persists_is_a_yes_or_no(tmp_path: Path) -> None:
    with pytest.raises(TargetConfigError, match="compile_cache_persists"):
        load_targets(write(tmp_path, "targets:\n  local: {kind: local, compile_cache_persists: maybe}\n"))
