"""Issue 19, class 8, without the server: a derived folder swapped for a symlink between two writes of a run is
refused before the next write, by the writer itself (ledger/derived.py derived_write), and nothing lands outside.

Each outside folder mirrors what redline would write into (cells/a/, trials/a-2/), so a write that skipped the
check would succeed there; the tree outside is compared before and after.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from redline.errors import DerivedPathError
from redline.ledger.ab_file import AbPaths, read_trial
from redline.ledger.campaign_file import cells_of
from redline.ledger.derived import derived_write
from redline.ledger.ladder_file import runs_dir
from redline.ledger.server_record import ServerRecord, clear_server, load_server, save_server
from redline.models import ServeConfig
from redline.targets import PosixLocator, ServerHandle
from tests.campaign.helpers import verdict, write_verdict

HANDLE = ServerHandle(
    target="local",
    run_dir="/tmp/redline/runs/r1",
    log_path="/tmp/redline/runs/r1/server.log",
    started_at="2026-11-30T10:00:00+00:00",
    locator=PosixLocator(pid=77, pgid=77, start_ticks=5),
)
RECORD = ServerRecord(rung_index=2, handle=HANDLE, config=ServeConfig(model="/m", max_model_len=4096), boot_log_bytes=0)


def tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


def swap_for_a_link(folder: Path, outside: Path) -> None:
    """What a neighbour does between two cells: the real folder moved aside, a symlink out in its place."""
    folder.rename(folder.with_name(folder.name + "-moved"))
    folder.symlink_to(outside, target_is_directory=True)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    for sub in ("cells/b", "b", "trials/a-2", "a-2", "rung-002"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "cells" / "b" / "server.json").write_text("a file a clear must not delete\n")
    return folder


# the folder swapped (under the results folder) and where its link leads (under outside)
SWAPPED = {
    "the results folder": (".", "."),
    "the cells folder": ("cells", "."),
    "a cell's folder": ("cells/b", "cells/b"),
}


@pytest.mark.parametrize("where", sorted(SWAPPED))
def test_derived_folder_a_campaign_folder_swapped_between_cells_refuses_every_write_after(
    tmp_path: Path, outside: Path, where: str
) -> None:
    results = tmp_path / "campaigns" / "c"
    results.parent.mkdir()  # the campaign file's folder: a person's
    cells_of(results).write_unit_file("a", "boot.log", "cell a ran\n")  # the first cell: all real folders
    write_verdict(results, verdict("a", {1: 1.0}))
    cells_of(results).write_unit_file("b", "bench-c1.json", "{}")  # the second cell has begun
    folder, target = SWAPPED[where]
    before = tree(outside)
    swap_for_a_link((results / folder).resolve(), (outside / target).resolve())
    writes = [
        lambda: cells_of(results).write_unit_file("b", "boot.log", "cell b's log\n"),
        lambda: write_verdict(results, verdict("b", {1: 1.0})),
        lambda: save_server(cells_of(results).server_file("b"), RECORD, results.parent),
        lambda: clear_server(cells_of(results).server_file("b"), results.parent),
    ]
    if folder == ".":  # the report and its plots go to the results folder itself
        writes += [
            lambda: cells_of(results).write(results / "report.md", "# report\n"),
            lambda: cells_of(results).checked(results / "throughput.png", create=True),
        ]
    for write in writes:
        with pytest.raises(
            DerivedPathError, match=r"is a symlink \(it could lead out of the workspace\), not a folder"
        ):
            write()
    assert tree(outside) == before


def test_derived_folder_each_write_checks_again_so_a_folder_made_real_again_is_written(tmp_path: Path) -> None:
    results = tmp_path / "campaigns" / "c"
    results.parent.mkdir()
    path = derived_write(tmp_path / "campaigns", "c/cells/a/boot.log", "x")
    assert path == cells_of(results).unit_dir("a") / "boot.log" and path.read_text() == "x"
    save_server(cells_of(results).server_file("a"), RECORD, results.parent)
    assert load_server(cells_of(results).server_file("a"), results.parent) == RECORD
    clear_server(cells_of(results).server_file("a"), results.parent)
    assert not cells_of(results).server_file("a").exists()


def test_derived_folder_an_ab_trials_folder_swapped_between_trials_refuses_the_next_trial(
    tmp_path: Path, outside: Path
) -> None:
    paths = AbPaths(tmp_path, "ab1")
    paths.results.write_unit_file("a-1", "boot.log", "trial a-1\n")
    before = tree(outside)
    swap_for_a_link(paths.results.root / "trials", outside / "trials")
    with pytest.raises(DerivedPathError, match="trials is a symlink"):
        paths.results.write_unit_file("a-2", "boot.log", "trial a-2\n")
    with pytest.raises(DerivedPathError, match="trials is a symlink"):
        read_trial(paths, "a", 1)  # nor is anything read through it
    swap_for_a_link(paths.results.root, outside)  # the A/B's own folder, then ab/ itself
    with pytest.raises(DerivedPathError, match="ab1 is a symlink"):
        save_server(paths.results.server_file("a-2"), RECORD, paths.workspace)
    assert tree(outside) == before


def test_derived_folder_a_ladder_runs_folder_swapped_between_rungs_refuses_the_server_record(
    tmp_path: Path, outside: Path
) -> None:
    ladder = tmp_path / "ladders" / "l8b.yml"
    record = runs_dir(ladder) / "server.json"
    ladder.parent.mkdir()
    derived_write(ladder.parent, "l8b.runs/rung-001/boot.log", "rung 1\n")
    before = tree(outside)
    swap_for_a_link(runs_dir(ladder), outside)
    with pytest.raises(DerivedPathError, match="l8b.runs is a symlink"):
        save_server(record, RECORD)  # a ladder's record: checked from the ladder's folder, its default
    with pytest.raises(DerivedPathError, match="l8b.runs is a symlink"):
        derived_write(ladder.parent, "l8b.runs/rung-002/boot.log", "rung 2\n")
    assert tree(outside) == before
