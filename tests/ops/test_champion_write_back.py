"""Issue 32, item 1: the champion write-back passes the engine's allowlist, as a serve config does at init.

The real H200 A/B (tests/data/vllm-0.26.0-h200-ab, judged on latency: mnbt8192 a VERDICT's champion) is closed (its
known-good config recorded) and written back into a values file; a flag or env edited into one of the champion's
trial records after the A/B closed is refused by the dry run and by the write, naming the flag and the file, and the
values file is left as it was. A refusal for a missing or stale `expect` never says the diff id.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redline.errors import InputError
from redline.ops.ab.apply import champion_apply
from redline.ops.ab.result import ab_close
from redline.ops.evidence.known_good import known_good_record
from redline.ops.requests_evidence import ChampionApplyRequest, KnownGoodRecordRequest
from tests.rigor.helpers import latency_champion

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab"
AB, CHAMPION = "l8b-mnbt", "mnbt8192"
VALUES = "vllm:\n  extraArgs:\n    - --max-num-batched-tokens=2048   # the deploy's\n"
APPLY = ChampionApplyRequest(ab=AB, values="deploy/values.yaml", baseline="llama8b-prod", dry_run=True)
GO = {"dry_run": False, "i_understand_this_writes_the_deploy": True}
# (what is edited into the champion's serve config, the words its refusal says)
EDITS = [
    ("  extra_flags: []\n", "  extra_flags: [--trust-remote-code]\n", "'--trust-remote-code'"),
    ("  extra_flags: []\n", "  extra_flags: ['--chat-template=/etc/shadow']\n", "'--chat-template=/etc/shadow'"),
    ("  extra_flags: []\n", "  extra_flags: ['--tokenizer=/etc']\n", "'--tokenizer=/etc'"),
    ("  env: {}\n", "  env: {LD_PRELOAD: /tmp/x.so}\n", "LD_PRELOAD"),
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    latency_champion(tmp_path)  # the A/B on latency, its champion's TTFT the baseline's (a constructed figure)
    known_good_record(tmp_path, KnownGoodRecordRequest(from_ab=AB, arm=CHAMPION, why="the A/B's champion"))
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "values.yaml").write_text(VALUES)
    close = ab_close(tmp_path, AB)[3]
    assert close is not None and close.closed, close
    return tmp_path


@pytest.mark.parametrize(("old", "new", "named"), EDITS, ids=["remote-code", "chat-template", "tokenizer", "env"])
@pytest.mark.parametrize("trial", [1, 3])
def test_champion_write_back_refuses_a_flag_edited_into_a_trial_record(
    ws: Path, old: str, new: str, named: str, trial: int
) -> None:
    dry = champion_apply(ws, APPLY)  # the record as the A/B wrote it: written back
    record = ws / "ab" / AB / "trials" / f"{CHAMPION}-{trial}" / "trial.yml"
    text = record.read_text()
    assert old in text
    record.write_text(text.replace(old, new, 1))
    file = f"ab/{AB}/trials/{CHAMPION}-{trial}/trial.yml"
    for update in ({}, GO | {"expect": dry.diff_id}):
        with pytest.raises(InputError) as refused:
            champion_apply(ws, APPLY.model_copy(update=update))
        message = str(refused.value)
        assert message.startswith(f"the champion '{CHAMPION}' of A/B '{AB}' ({file}) is refused: "), message
        assert named in message and "\n" not in message
    assert (ws / "deploy" / "values.yaml").read_text() == VALUES


def test_champion_write_back_shows_only_what_it_writes_and_never_the_diff_id_in_a_refusal(ws: Path) -> None:
    dry = champion_apply(ws, APPLY)
    assert dry.changes[0] == "--max-num-batched-tokens=2048 -> --max-num-batched-tokens=8192"
    assert not dry.written and (ws / "deploy" / "values.yaml").read_text() == VALUES
    for expect in (None, "0" * 16):
        with pytest.raises(InputError, match="expect must be the diff_id of the dry run whose diff you read") as no:
            champion_apply(ws, APPLY.model_copy(update=GO | {"expect": expect}))
        assert dry.diff_id not in str(no.value) and not re.search(r"\b[0-9a-f]{16}\b", str(no.value))
    done = champion_apply(ws, APPLY.model_copy(update=GO | {"expect": dry.diff_id}))
    assert done.written and done.diff == dry.diff and done.changes == dry.changes
