"""The known-good entry applied where servers boot (ladder_init, campaign_run) and the close of champion_select:
the small hooks those modules call (ops/evidence/known_good_apply.py, ops/campaign/close.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.models.known_good import Evidence
from redline.ops.campaign.results import champion_select
from redline.ops.campaign.run import campaign_run
from redline.ops.evidence.known_good import known_good_record
from redline.ops.ladder.plan import ladder_init
from redline.ops.requests import LadderInitRequest
from redline.ops.requests_evidence import KnownGoodRecordRequest
from tests.campaign.helpers import make_fake
from tests.conftest import H200

pytestmark = pytest.mark.anyio
FLAG = "--gdn-prefill-backend=triton"


def record(workspace: Path, model: str, hardware: str = "NVIDIA H200", **changes: object) -> None:
    fields = (
        dict(
            model=model,
            hardware=hardware,
            engine_version="0.26.0",
            flags=[FLAG],
            knobs={"enforce_eager": True},
            why="the default kernel crashes under load",
            evidence=[Evidence(kind="note", ref="notes.md")],
        )
        | changes
    )
    known_good_record(workspace, KnownGoodRecordRequest(**fields))


def init(tmp_path: Path, **changes: object) -> LadderInitRequest:
    fields = (
        dict(
            model="llama8b",
            model_path=str(H200 / "models" / "llama8b"),
            floor_max_model_len=32768,
            floor_max_num_batched_tokens=8192,
            gpu_name="NVIDIA H200",
            engine_version="0.26.0",
        )
        | changes
    )
    return LadderInitRequest(**fields)  # type: ignore[arg-type]


def test_ladder_init_applies_the_matching_entry_to_its_fixed_knobs_and_says_so(tmp_path: Path) -> None:
    record(tmp_path, str(H200 / "models" / "llama8b"), knobs={"enforce_eager": True, "max_model_len": 4096})
    ladder = ladder_init(tmp_path / "ladders" / "l8b.yml", init(tmp_path))
    assert ladder.known_good is not None and ladder.known_good.applied
    assert ladder.fixed.extra_flags == [FLAG] and ladder.fixed.enforce_eager is True
    assert "applied: added flag --gdn-prefill-backend=triton, enforce_eager True" in ladder.known_good.note
    assert "the default kernel crashes under load" in ladder.known_good.note  # the entry's why travels with it
    assert "known_good:" in (tmp_path / "ladders" / "l8b.yml").read_text()  # recorded in the ladder file


def test_ladder_init_can_be_told_not_to_and_says_what_it_needs_to_look_one_up(tmp_path: Path) -> None:
    record(tmp_path, str(H200 / "models" / "llama8b"))
    off = ladder_init(tmp_path / "a.yml", init(tmp_path, skip_known_good=True))
    assert off.known_good is not None and off.fixed.extra_flags == [] and "turned off" in off.known_good.note
    blind = ladder_init(tmp_path / "b.yml", init(tmp_path, gpu_name=None, engine_version=None))
    assert blind.known_good is not None and blind.fixed.extra_flags == [] and not blind.known_good.applied
    assert "give gpu_name and engine_version to ladder_init" in blind.known_good.note
    kept = ladder_init(tmp_path / "c.yml", init(tmp_path, fixed={"enforce_eager": False}))
    assert kept.known_good is not None and kept.fixed.enforce_eager is False
    assert "kept the config's own enforce_eager False" in kept.known_good.note


async def test_campaign_run_applies_the_entry_to_every_cell_unless_told_not_to(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    record(tmp_path, str(fake.model), hardware="cpu")  # this host has no GPU: its hardware key is cpu
    path = fake.write()
    async with fake.target() as target:
        on = await campaign_run(path, target, i_understand_this_submits_jobs=False, dry_run=True)
        off = await campaign_run(path, target, i_understand_this_submits_jobs=False, dry_run=True, skip_known_good=True)
    assert on.plan is not None and off.plan is not None
    assert all(FLAG in c.boot_command and "--enforce-eager" in c.boot_command for c in on.plan.cells)
    assert all(c.serve.extra_flags == [FLAG] and any("applied" in g for g in c.gates) for c in on.plan.cells)
    assert any(g.startswith("known-good entry") for g in on.plan.gates)
    assert all(FLAG not in c.boot_command for c in off.plan.cells)
    assert any("turned off by the request" in g for g in off.plan.gates)


async def test_champion_select_ends_with_the_next_levers_and_says_what_the_close_lacks(tmp_path: Path) -> None:
    fake = make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1")
    path = fake.write(focus="latency")
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    report = champion_select(path)
    assert report.champion == "mnbt8192" and report.outcome == "improvement" and report.rigor == "DRAFT"
    assert list(report.model_dump())[-2:] == ["close", "next_levers"]  # the output ends with them
    assert report.next_levers and all(lever.gate for lever in report.next_levers)
    close = report.close
    assert close is not None and not close.closed and close.next_lever == report.next_levers[0].lever
    assert any("a VERDICT: a same-node A/B" in m for m in close.missing)
    assert any("known_good_record with from_campaign and cell=mnbt8192" in m for m in close.missing)
    known_good_record(
        tmp_path,
        KnownGoodRecordRequest(from_campaign="campaigns/c1.yml", cell="mnbt8192", why="the campaign's champion"),
    )
    again = champion_select(path).close
    assert again is not None and again.known_good is not None and len(again.missing) == 1  # only the A/B is left


def test_a_campaign_workspace_is_the_folder_above_campaigns(tmp_path: Path) -> None:
    from redline.ops.evidence.known_good_apply import default_registry, workspace_of

    assert workspace_of(tmp_path / "campaigns" / "c.yml") == tmp_path == workspace_of(tmp_path / "c.yml")
    assert default_registry(tmp_path / "ladders" / "l.yml") == tmp_path.resolve() / "known-good.yml"
