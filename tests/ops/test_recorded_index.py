"""The workspace's recorded boots are read through its index (issue 39, item 4): built once from the folders, added
to when a record is written, so a plan reads the records it names and walks no folder; a record written is not read
back; a record gone is left out; a torn line is passed over."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from redline.ledger import create_ladder, read_ladder
from redline.ledger.boots_index import read_index
from redline.ops.ladder.record import record_boot
from redline.ops.predict import recorded
from redline.ops.predict.recorded import INDEX, recorded_boots

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-predict"


def workspace(tmp_path: Path, *, state: bool = True) -> Path:
    """A workspace with the real llama8b predict ladder (two booted rungs, its model's shape kept)."""
    ws = tmp_path / "ws"
    (ws / "ladders").mkdir(parents=True)
    shutil.copy(DATA / "llama8b" / "ladder.yml", ws / "ladders" / "l8b.yml")
    if state:
        (ws / ".redline").mkdir()
    return ws


def no_walking(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: Path, pattern: str) -> None:
        raise AssertionError(f"walked {self} for {pattern}")

    monkeypatch.setattr(Path, "glob", refused)


def test_the_index_is_built_once_then_read_instead_of_the_folders(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    ws = workspace(tmp_path)
    first = recorded_boots(ws, "vllm")
    assert [o.source for o in first.observations] == ["ladders/l8b.yml rung 1", "ladders/l8b.yml rung 2"]
    assert [(e.kind, e.path, e.engine) for e in read_index(ws, INDEX) or []] == [("ladder", "ladders/l8b.yml", "vllm")]
    no_walking(monkeypatch)
    assert recorded_boots(ws, "vllm").observations == first.observations
    assert recorded_boots(ws, "sglang").observations == []  # the index says each record's engine


def test_a_rung_recorded_joins_the_index_and_is_not_read_back(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    ws = workspace(tmp_path)
    recorded_boots(ws, "vllm")  # the index, built
    fresh = read_ladder(DATA / "llama8b" / "ladder.yml").model_copy(
        update={"rungs": [], "ceiling": None, "joint": None}
    )
    create_ladder(ws / "ladders" / "new.yml", fresh)
    record_boot(
        ws / "ladders" / "new.yml",
        (DATA / "llama8b" / "ladder.runs" / "rung-001" / "boot.log").read_text(),
        workspace=ws,
    )
    assert ("ladder", "ladders/new.yml", "vllm") in [(e.kind, e.path, e.engine) for e in read_index(ws, INDEX) or []]
    no_walking(monkeypatch)
    monkeypatch.setattr(recorded, "read_ladder", lambda path: pytest.fail(f"read {path} again"))
    sources = [o.source for o in recorded_boots(ws, "vllm").observations]
    assert "ladders/new.yml rung 1" in sources and "ladders/l8b.yml rung 2" in sources


def test_a_record_gone_is_left_out_and_a_torn_line_passed_over(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    recorded_boots(ws, "vllm")
    with (ws / INDEX).open("a") as index:
        index.write('{"kind": "ladder", "path": "ladders/l8b')  # a write cut short
    (ws / "ladders" / "l8b.yml").unlink()
    found = recorded_boots(ws, "vllm")
    assert found.observations == [] and found.left_out == []


def test_a_folder_with_no_state_folder_is_read_but_not_written_to(tmp_path: Path) -> None:
    ws = workspace(tmp_path, state=False)
    assert len(recorded_boots(ws, "vllm").observations) == 2
    assert not (ws / ".redline").exists()  # a command that only reads leaves a person's folder as it was
