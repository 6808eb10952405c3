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


# ---- issue 38, items 4, 5 and 8 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    ["--max-num-batched=2048", "--max_num_batched_tokens=2048", "--max-num-batched 2048", "--max-num-b=2048"],
)
def test_deploy_spellings_a_prefix_or_underscore_spelling_of_the_champion_s_option_is_replaced_not_kept(
    ws: Path, spelling: str
) -> None:
    """The issue's run: the deploy kept a later `--max-num-batched=2048` (a prefix argparse accepts), ran 2,048, while
    baselines.yml recorded the champion (8,192) as deployed."""
    values = ws / "deploy" / "values.yaml"
    values.write_text(VALUES + "".join(f"    - '{item}'\n" for item in spelling.split(" ")) + "    - --enforce-eager\n")
    dry = champion_apply(ws, APPLY)
    assert dry.changes[0] == "--max-num-batched-tokens=2048 -> --max-num-batched-tokens=8192"
    assert f"- {spelling.split(' ')[0]} (item 1)" in dry.changes  # the dry run shows the spelling it removes
    champion_apply(ws, APPLY.model_copy(update=GO | {"expect": dry.diff_id}))
    written = values.read_text()
    assert "2048" not in written and written.count("--max-num-batched-tokens=8192") == 1, written
    assert "--enforce-eager" in written and "# the deploy's" in written


@pytest.mark.parametrize(
    ("values", "what"),
    [
        ("baselines.yml", "the recorded baselines (baselines.yml)"),
        ("known-good.yml", "the known-good registry (known-good.yml)"),
        (f"ab/{AB}/trials/{CHAMPION}-1/trial.yml", "an A/B's spec or its trial records (ab/)"),
        (f"ab/{AB}.yml", "an A/B's spec or its trial records (ab/)"),
        ("ladders/l8b.yml", "a ladder or its rung files (ladders/)"),
        ("campaigns/c1.yml", "a campaign file or its results (campaigns/)"),
        ("frontier.yml", "the frontier of levers (frontier.yml)"),
        ("deploy/l8b.runs/rung-001/x.yaml", "a ladder's run folder (.runs)"),
        ("deploy/linked.yaml", "the recorded baselines (baselines.yml)"),  # a link to baselines.yml
        ("deploy/moved-trial.yml", "an A/B's trial record"),  # a trial record copied elsewhere: by what it holds
    ],
)
def test_champion_write_back_never_writes_redline_s_own_records(ws: Path, values: str, what: str) -> None:
    (ws / "deploy" / "linked.yaml").symlink_to(ws / "baselines.yml")
    (ws / "baselines.yml").write_text("baselines: []\nvllm:\n  extraArgs: []\n")
    trial = ws / "ab" / AB / "trials" / f"{CHAMPION}-1" / "trial.yml"
    (ws / "deploy" / "moved-trial.yml").write_text(trial.read_text().replace("schema_version: 1\n", ""))
    for folder in ("ladders", "campaigns", "deploy/l8b.runs/rung-001"):
        (ws / folder).mkdir(parents=True, exist_ok=True)
    for made in ("ladders/l8b.yml", "campaigns/c1.yml", "deploy/l8b.runs/rung-001/x.yaml"):  # frontier.yml: absent
        (ws / made).write_text("vllm:\n  extraArgs: []\n")
    files = lambda: {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and p.suffix != ".lock"}  # noqa: E731
    before = files()
    for update in ({}, GO | {"expect": "0" * 16}):
        with pytest.raises(InputError) as refused:
            champion_apply(ws, APPLY.model_copy(update={"values": values, **update}))
        said = str(refused.value)
        assert said.startswith(f"values: {values!r} is {what}, one of redline's own records"), said
        assert str(ws) not in said
    assert files() == before


def test_champion_write_back_names_the_deploy_s_values_file_relative_to_the_workspace(ws: Path) -> None:
    """The issue's run: a values file with an anchor was refused naming the server's absolute workspace path and
    calling it one of "redline's files"."""
    values = ws / "deploy" / "values.yaml"
    values.write_text("common: &args\n  - --enforce-eager\nvllm:\n  extraArgs: *args\n")
    with pytest.raises(InputError) as refused:
        champion_apply(ws, APPLY)
    said = str(refused.value)
    assert said.startswith("deploy/values.yaml (the deploy's values file) uses a YAML alias (*args)"), said
    assert "cannot be edited in one place without changing every use of it" in said
    assert str(ws) not in said and "redline's files" not in said
    values.write_text("vllm: [")
    with pytest.raises(InputError, match=r"^deploy/values.yaml \(the deploy's values file\): not valid YAML at line"):
        champion_apply(ws, APPLY)
    values.unlink()
    with pytest.raises(InputError, match=r"^deploy/values.yaml \(the deploy's values file\): no such file"):
        champion_apply(ws, APPLY)
