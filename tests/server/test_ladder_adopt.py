"""ladder_adopt: a ladder climbed elsewhere copied into the workspace with its rung files, paths re-based, its origin
recorded, read as untrusted input, refused where the destination exists or the server config does not allow the
source (issue 20, item 8). The ladder adopted is the real H200 climb in tests/data (4 rungs, 2 smoke tests)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from ruamel.yaml import YAML

from redline.ledger import read_ladder
from redline.server.app import build_server
from redline.server.config import load_server_config
from tests.server.helpers import Env, call, call_error

pytestmark = pytest.mark.anyio
CLIMBS = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-ladder"
SOURCE = CLIMBS / "llama8b" / "ladder.yml"
RUNG_FILES = [
    "rung-001/boot.log",
    "rung-002/boot.log",
    "rung-002/smoke.json",
    "rung-003/boot.log",
    "rung-004/boot.log",
    "rung-004/smoke.json",
]


def allow(env: Env, *folders: Path) -> Env:
    """The server config with `adopt_from:` naming these folders, read again."""
    config = json.loads(env.config_path.read_text())
    env.config_path.write_text(json.dumps({**config, "adopt_from": [str(f) for f in folders]}))
    env.config = load_server_config(env.config_path)
    return env


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def planted(tmp_path: Path, change: Any = None) -> Path:
    """A copy of the real climb (ladder.yml and ladder.runs/) whose ladder `change(doc)` edited."""
    folder = tmp_path / "elsewhere" / "llama8b"
    shutil.copytree(SOURCE.parent, folder)
    if change is not None:
        yaml = YAML()
        doc = yaml.load((folder / "ladder.yml").read_text())
        change(doc)
        with (folder / "ladder.yml").open("w") as f:
            yaml.dump(doc, f)
    return folder / "ladder.yml"


def stdio(env: Env) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


async def test_ladder_adopt_copies_the_climb_with_its_rung_files_rebased_and_its_origin_over_stdio(env: Env) -> None:
    allow(env, CLIMBS)
    async with Client(stdio(env)) as client:
        adopted = await call(client, "ladder_adopt", source=str(SOURCE), name="llama8b-h200")
        assert adopted["path"] == "ladders/llama8b-h200.yml" and adopted["rungs"] == 4
        assert adopted["files"] == [f"ladders/llama8b-h200.runs/{f}" for f in RUNG_FILES]
        origin = adopted["adopted_from"]
        assert origin["path"] == str(SOURCE) and origin["sha256"] == hashlib.sha256(SOURCE.read_bytes()).hexdigest()
        assert adopted["ceiling"]["max_model_len"] == 131072 and adopted["next"]["route"] == "done"

        status = await call(client, "ladder_status", ladder="ladders/llama8b-h200.yml")  # a ladder like any other
        assert status["next"]["route"] == "done" and status["ladder"]["adopted_from"] == origin
        rungs = status["ladder"]["rungs"]
        assert [r["log_file"] for r in rungs] == [f"llama8b-h200.runs/rung-00{i}/boot.log" for i in (1, 2, 3, 4)]
        assert rungs[3]["smoke_test"]["result_file"] == "llama8b-h200.runs/rung-004/smoke.json"

        # its ceiling is a campaign's base at once: nothing climbed again
        spec = {
            "name": "c1",
            "target": "local",
            "base": {"from_ladder": "../ladders/llama8b-h200.yml"},
            "workload": {"input_len": 128, "output_len": 16},
            "concurrencies": [1],
            "grid": {"max_num_seqs": [8, 16]},
        }
        created = await call(client, "campaign_init", campaign="campaigns/c1.yml", spec=spec)
        assert created["base"]["max_model_len"] == 131072 and created["base"]["max_num_batched_tokens"] == 131072

        again = await call_error(client, "ladder_adopt", source=str(SOURCE), name="llama8b-h200")
        assert "ladders/llama8b-h200.yml: already there; adopt the ladder under another name" in again
        by_key = await call(client, "ladder_adopt", source=str(SOURCE))  # no name: the model key
        assert by_key["path"] == "ladders/llama8b.yml"

    copied = files(env.workspace / "ladders" / "llama8b-h200.runs")
    assert copied == {f: (SOURCE.parent / "ladder.runs" / f).read_bytes() for f in RUNG_FILES}  # byte for byte
    ladder = read_ladder(env.workspace / "ladders" / "llama8b-h200.yml")
    source = read_ladder(SOURCE)
    assert ladder.adopted_from is not None and source.adopted_from is None  # an old ladder file reads as before
    assert ladder.ceiling == source.ceiling and [r.signals for r in ladder.rungs] == [r.signals for r in source.rungs]
    assert (
        "# redline ladder: one model on one GPU profile" in (env.workspace / "ladders" / "llama8b-h200.yml").read_text()
    )


async def test_ladder_adopt_outside_the_workspace_is_refused_unless_the_server_config_allows_its_folder(
    env: Env, tmp_path: Path
) -> None:
    source = planted(tmp_path)
    before = files(env.workspace)
    async with Client(build_server(env.config)) as client:
        said = await call_error(client, "ladder_adopt", source=str(source))
    assert f"source: {str(source)!r} is outside the workspace and outside every folder the server config's" in said
    assert "adopt_from: names (none)" in said
    assert files(env.workspace) == before

    # a folder allowed, and a link inside it that leads elsewhere: the link's target is what is judged
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "link.yml").symlink_to(source)
    async with Client(build_server(allow(env, allowed).config)) as client:
        said = await call_error(client, "ladder_adopt", source=str(allowed / "link.yml"))
        assert f"adopt_from: names ({allowed})" in said
        said = await call_error(client, "ladder_adopt", source="../elsewhere/llama8b/ladder.yml")
        assert "must be a path inside the workspace" in said
    assert files(env.workspace) == before

    async with Client(build_server(allow(env, tmp_path / "elsewhere").config)) as client:
        adopted = await call(client, "ladder_adopt", source=str(source), name="h200")
    assert adopted["path"] == "ladders/h200.yml" and len(adopted["files"]) == 6


async def test_ladder_adopt_reads_a_ladder_inside_the_workspace_by_its_relative_path(env: Env) -> None:
    shutil.copytree(SOURCE.parent, env.workspace / "imports" / "llama8b")
    async with Client(build_server(env.config)) as client:
        adopted = await call(client, "ladder_adopt", source="imports/llama8b/ladder.yml", name="l8b.yml")
    assert adopted["path"] == "ladders/l8b.yml"  # a name given as a file name is the same name
    assert adopted["adopted_from"]["path"] == str((env.workspace / "imports" / "llama8b" / "ladder.yml").resolve())


def _log_file(value: str) -> Any:
    def change(doc: Any) -> None:
        doc["rungs"][0]["log_file"] = value

    return change


HOSTILE = [
    ("a log named out of its folder", _log_file("../../../etc/hostname"), "is not in its own folder"),
    ("a log of another rung's folder", _log_file("ladder.runs/rung-002/boot.log"), "is not in its own folder"),
    ("a log with an odd name", _log_file("ladder.runs/rung-001/.hidden"), "has a name redline never writes"),
    ("not a ladder", lambda doc: doc.pop("floor"), "does not follow the ladder schema: floor: Field required"),
    ("a rung out of order", lambda doc: doc["rungs"].pop(0), "rung 2 is at position 1"),
]


@pytest.mark.parametrize(("case", "change", "said"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_ladder_adopt_refuses_a_hostile_source_and_writes_nothing(
    env: Env, tmp_path: Path, case: str, change: Any, said: str
) -> None:
    source = planted(tmp_path, change)
    before = files(env.workspace)
    async with Client(build_server(allow(env, tmp_path).config)) as client:
        message = await call_error(client, "ladder_adopt", source=str(source))
    assert said in message and "\n" not in message.strip(), message
    assert not (env.workspace / "ladders" / "llama8b.yml").exists()
    assert {k: v for k, v in files(env.workspace).items() if not k.startswith("ladders/")} == before


async def test_ladder_adopt_refuses_rung_files_that_are_links_fifos_missing_or_an_alias_bomb(
    env: Env, tmp_path: Path
) -> None:
    allow(env, tmp_path)
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "boot.log").write_text("not for the workspace")
    cases = {}
    source = planted(tmp_path / "a")
    shutil.rmtree(source.parent / "ladder.runs" / "rung-001")
    (source.parent / "ladder.runs" / "rung-001").symlink_to(outside)
    cases["a rung folder linked out"] = (source, "is a symlink (it could lead out of the workspace), not a folder")
    source = planted(tmp_path / "b")
    (source.parent / "ladder.runs" / "rung-003" / "boot.log").unlink()
    os.mkfifo(source.parent / "ladder.runs" / "rung-003" / "boot.log")
    cases["a FIFO for a log"] = (source, "is a FIFO")
    source = planted(tmp_path / "c")
    (source.parent / "ladder.runs" / "rung-002" / "smoke.json").unlink()
    cases["a smoke result missing"] = (
        source,
        "source: ladder.runs/rung-002/smoke.json, which the ladder names, is not there: copy the ladder with its "
        "ladder.runs folder",
    )
    bomb = tmp_path / "d" / "ladder.yml"
    bomb.parent.mkdir()
    bomb.write_text("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n")
    cases["an alias bomb"] = (bomb, "uses a YAML alias")
    async with Client(build_server(env.config)) as client:
        for case, (path, said) in cases.items():
            with anyio.fail_after(20):  # a FIFO must not block the call
                message = await call_error(client, "ladder_adopt", source=str(path))
            assert said in message, (case, message)
    assert not (env.workspace / "ladders").exists() or not any((env.workspace / "ladders").iterdir())


def test_the_cli_adopts_any_path_a_person_names_into_a_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    argv = [sys.executable, "-m", "redline", "ladder", "adopt", str(SOURCE), "--workspace", str(workspace)]
    done = subprocess.run([*argv, "--name", "llama8b-h200"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.startswith(f"adopted {SOURCE} (sha256 ") and "as ladders/llama8b-h200.yml: 4 rungs" in done.stdout
    )
    assert "ceiling  max_model_len 131,072" in done.stdout and "next     done" in done.stdout
    assert files(workspace / "ladders" / "llama8b-h200.runs") == {
        f: (SOURCE.parent / "ladder.runs" / f).read_bytes() for f in RUNG_FILES
    }
    again = subprocess.run([*argv, "--name", "llama8b-h200", "--json"], capture_output=True, text=True, timeout=60)
    assert again.returncode != 0 and "already there; adopt the ladder under another name" in again.stderr
    bad = subprocess.run([*argv, "--name", "../x"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--name" in bad.stderr and not (tmp_path / "x.yml").exists()
