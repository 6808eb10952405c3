"""Issue 19, class 3, without the server: the one path checker (ops/workspace.py `inside`), the campaign loader that
applies it to base.from_ladder itself, and the names (A/B, cell, arm, baseline) that are slugs.

Outside the workspace sit `secret.yml` (a real ladder with a ceiling: read through a hole, it would plan) and
`keys.yml` (keys a refusal must never show); HOME points there, so an expanded `~` would reach them. Every
refusal is compared with the one for a name that differs only by a file that does not exist: the same words.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from redline.errors import InputError
from redline.ledger.ab_file import AbPaths
from redline.ledger.campaign_file import cells_of
from redline.models.slug import check_slug
from redline.ops.campaign_read import ladder_ceiling, load_campaign, load_named
from redline.ops.requests_evidence import KnownGoodRecordRequest, PerfBaselineDiffRequest, PerfBaselineRecordRequest
from redline.ops.workspace import inside
from tests.conftest import DATA

LADDER = DATA / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with a ladder and a campaigns folder; beside it `outside`, holding the secrets, and HOME."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(LADDER, outside / "secret.yml")
    (outside / "keys.yml").write_text("api_key_hunter2: s3cr3t-value\n")
    monkeypatch.setenv("HOME", str(outside))
    workspace = tmp_path / "ws"
    (workspace / "ladders").mkdir(parents=True)
    (workspace / "campaigns").mkdir()
    shutil.copy(LADDER, workspace / "ladders" / "l8b.yml")
    (workspace / "exit").symlink_to(outside, target_is_directory=True)  # a symlink out, planted
    (workspace / "up").symlink_to("../outside", target_is_directory=True)  # a relative one
    return workspace


def outside_of(ws: Path) -> Path:
    return ws.parent / "outside"


def refusal(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises((InputError, ValidationError)) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    return str(info.value)


def same_either_way(ws: Path, said: str, missing: str, name: str) -> None:
    """The refusal of `name` (its file there, outside) says what the one of a missing file says, and nothing of it."""
    assert said == missing.replace("nosuch", "secret").replace("nokeys", "keys"), (said, missing)
    assert "hunter2" not in said and "s3cr3t" not in said and "llama8b" not in said, said
    if not os.path.isabs(name):
        assert str(outside_of(ws)) not in said, said  # where a link leads is never said


TOOL_NAMES = [
    "~/secret.yml",
    "~root/secret.yml",
    "../outside/secret.yml",
    "ladders/../../outside/secret.yml",
    "exit/secret.yml",
    "up/secret.yml",
    "./exit/./secret.yml",
    "..\\outside\\secret.yml",
    "exit",
]


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_path_checker_refuses_a_tool_name_out_of_the_workspace_the_same_whether_it_exists(ws: Path, name: str) -> None:
    said = refusal(inside, ws, name, "from_ladder")
    missing = refusal(inside, ws, name.replace("secret", "nosuch"), "from_ladder")
    assert said.startswith(f"from_ladder {name!r} must be a path inside the workspace"), said
    same_either_way(ws, said, missing, name)


def test_path_checker_an_absolute_name_is_refused_by_its_form(ws: Path) -> None:
    name = str(outside_of(ws) / "secret.yml")
    said = refusal(inside, ws, name, "bench_file")
    assert said.endswith(", not an absolute path or ~"), said
    same_either_way(ws, said, refusal(inside, ws, name.replace("secret", "nosuch"), "bench_file"), name)


def test_path_checker_follows_symlinks_only_while_they_stay_inside(ws: Path) -> None:
    (ws / "current").symlink_to(ws / "ladders", target_is_directory=True)  # absolute, inside
    (ws / "rel").symlink_to("ladders", target_is_directory=True)  # relative, inside
    (ws / "loop-a").symlink_to("loop-b")
    (ws / "loop-b").symlink_to("loop-a")
    real = ws.resolve() / "ladders" / "l8b.yml"
    assert inside(ws, "current/l8b.yml", "ladder") == real == inside(ws, "rel/l8b.yml", "ladder")
    assert inside(ws, "ladders/new.yml", "ladder") == ws.resolve() / "ladders" / "new.yml"  # need not exist
    assert "a symlink that leads out of the workspace (or a loop of them)" in refusal(inside, ws, "loop-a", "ladder")
    for link in ("exit/secret.yml", "up/secret.yml"):  # an absolute and a relative link out: a link, not a '..'
        assert refusal(inside, ws, link, "ladder").endswith(
            "it is a symlink that leads out of the workspace (or a loop of them)"
        )
    said = refusal(inside, ws, ".redline/jobs/x.json", "ladder")
    assert ".redline/ holds the server's own state" in said
    (ws / "state").symlink_to(ws / ".redline", target_is_directory=True)  # the state folder by another name
    assert ".redline/ holds the server's own state" in refusal(inside, ws, "state/jobs/x.json", "ladder")


def test_path_checker_a_name_relative_to_its_file_may_climb_but_not_out(ws: Path) -> None:
    campaigns = ws / "campaigns"
    assert inside(ws, "../ladders/l8b.yml", "base.from_ladder", base=campaigns) == ws.resolve() / "ladders/l8b.yml"
    for name in ("../../outside/secret.yml", "../exit/secret.yml", "../../ws/../outside/secret.yml", "~/secret.yml"):
        said = refusal(inside, ws, name, "base.from_ladder", base=campaigns)
        missing = refusal(inside, ws, name.replace("secret", "nosuch"), "base.from_ladder", base=campaigns)
        same_either_way(ws, said, missing, name)


# ---- the loader checks base.from_ladder itself --------------------------------------------------------------------


def campaign_with(ws: Path, from_ladder: str, name: str = "h") -> Path:
    spec = {
        "name": name,
        "target": "local",
        "base": {"from_ladder": from_ladder},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1],
        "grid": {"max_num_batched_tokens": [2048, 8192]},
    }
    path = ws / "campaigns" / f"{name}.yml"
    path.write_text(json.dumps(spec))
    return path


FROM_LADDER = [
    "~/secret.yml",
    "~/keys.yml",
    "../../outside/secret.yml",
    "../../outside/keys.yml",
    "../exit/secret.yml",
    "../up/keys.yml",
    "/abs/secret.yml",
]


@pytest.mark.parametrize("from_ladder", FROM_LADDER)
def test_path_checker_the_campaign_loader_refuses_a_from_ladder_out_whoever_calls_it(
    ws: Path, from_ladder: str
) -> None:
    from_ladder = from_ladder.replace("/abs", str(outside_of(ws)))
    path = campaign_with(ws, from_ladder)
    said = refusal(load_campaign, path)  # no workspace named: the one the file's layout names
    shown = repr(from_ladder if len(from_ladder) <= 80 else from_ladder[:77] + "...")  # a long name is cut at 80
    assert said.startswith(f"base.from_ladder {shown} must be a path inside the workspace"), said
    assert said == refusal(load_campaign, path, ws) == refusal(load_named, ws, "campaigns/h.yml", "from_campaign")
    missing = campaign_with(ws, from_ladder.replace("secret", "nosuch").replace("keys", "nokeys"))
    same_either_way(ws, said, refusal(load_campaign, missing, ws), from_ladder)


def test_path_checker_the_loader_reads_a_ladder_inside_once_and_the_ceiling_comes_from_that_read(ws: Path) -> None:
    loaded = load_campaign(campaign_with(ws, "../ladders/l8b.yml"), ws)
    assert loaded.ladder is not None and ladder_ceiling(loaded) == 131072
    (ws / "ladders" / "l8b.yml").unlink()  # gone since: the ceiling is the one read, never a second path
    assert ladder_ceiling(loaded) == 131072


# ---- names are slugs -------------------------------------------------------------------------------------------------

HOSTILE_NAMES = ["../../outside/secret", "~/secret", "/etc/passwd", "a/b", "..", "-rf", "Ab", "x\x00y", "é", "a" * 65]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_path_checker_ab_cell_arm_and_baseline_names_are_slugs_in_the_request_and_the_ledger(
    ws: Path, name: str
) -> None:
    for request, fields in (
        (PerfBaselineRecordRequest, [("ab", {"name": "b", "arm": "a"}), ("cell", {"name": "b", "campaign": "c"})]),
        (PerfBaselineDiffRequest, [("arm", {"baseline": "b", "ab": "x"}), ("against", {"baseline": "b"})]),
        (KnownGoodRecordRequest, [("from_ab", {"arm": "a"}), ("cell", {"from_campaign": "c"})]),
    ):
        for field, others in fields:
            said = refusal(request, **others, **{field: name})
            assert field in said and ("'s name" in said or "at most" in said), (field, said)
    assert "A/B: " in refusal(AbPaths, ws, name)
    assert "cell: " in refusal(cells_of(ws / "campaigns" / "c").unit_dir, name)
    assert "arm: " in refusal(AbPaths(ws, "fine").trial_dir, name, 1)


def test_path_checker_a_name_written_as_its_file_is_told_the_name_from_the_text_alone() -> None:
    with pytest.raises(ValueError, match="'ab/l8b-mnbt.yml' is a path, not the A/B's name; write the A/B's name, "):
        check_slug("ab/l8b-mnbt.yml", "A/B")
    with pytest.raises(ValueError, match=r"'../../outside/secret' is a path.*'secret'"):
        check_slug("../../outside/secret", "A/B")  # a hint from the text: nothing is looked up
    assert check_slug("l8b-mnbt.v2_a", "A/B") == "l8b-mnbt.v2_a"
