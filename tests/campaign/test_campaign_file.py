"""Bad campaign files end in one clear InputError that names the field to fix; good ones survive round trips."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from redline.errors import InputError, TargetConfigError
from redline.ledger.campaign_file import read_campaign, write_campaign
from redline.ops.campaign.plan import campaign_init, campaign_plan, check_inside, load_campaign, open_campaign_target
from redline.ops.ladder.plan import ladder_init
from redline.ops.requests import CampaignInitRequest, LadderInitRequest
from redline.targets import load_targets
from tests.campaign.helpers import Fake, make_fake
from tests.conftest import processes_naming


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as exc:
        load_campaign(path)
    text = str(exc.value)
    assert text and "\n" not in text, repr(text)
    return text


BAD = [
    # (what, changes to the spec, the field the message must lead with, more words it must hold)
    ("unknown lever in the grid", {"grid": {"max_num_seqz": [8]}}, "grid.max_num_seqz: unknown lever", "max_num_seqs"),
    (
        "unknown lever in a cell",
        {"cells": [{"name": "a", "gpu_memory_utilization": 0.8}]},
        "cells[0].gpu_memory_utilization: unknown lever",
        "the levers are",
    ),
    ("empty grid", {"grid": {}}, "grid: empty", "cells"),
    ("no grid and no cells", {"grid": None}, "grid: empty", "lever"),
    ("a lever with no values", {"grid": {"max_num_seqs": []}}, "grid.max_num_seqs: no values", "drop the lever"),
    (
        "a grid flag that is not a flag",
        {"grid": {"extra_flags": [[], ["-O3"]]}},
        "grid.extra_flags[1][0]:",
        "not an engine flag",
    ),
    (
        "a cell flag that is not a flag",
        {"cells": [{"name": "a", "extra_flags": ["async-scheduling"]}]},
        "cells[0].extra_flags[0]:",
        "--name",
    ),
    ("a concurrency of 0", {"concurrencies": [0, 4]}, "concurrencies[0]:", "greater than 0"),
    (
        "an SLA on a metric that does not exist",
        {"sla": {"p99_tpot_s": 5}},
        "sla: no metric 'p99_tpot_s'",
        "p99_tpot_ms",
    ),
    ("goodput without its SLA", {"focus": "goodput"}, "sla: focus goodput needs", "p99_ttft_ms"),
    ("an unknown focus", {"focus": "speed"}, "focus:", "throughput"),
    ("an unknown field", {"concurrency": [1]}, "concurrency: unknown field", ""),
    ("no max_model_len and no ladder", {"base": {"port": 8011}}, "base: give max_model_len", "from_ladder"),
    (
        "a base knob of the wrong kind",
        {"base": {"max_model_len": 4096, "gpu_memory_utilization": 2}},
        "base.gpu_memory_utilization:",
        "1",
    ),
    ("an unknown engine", {"engine": "tgi"}, "engine:", "unknown engine"),
    ("no model", {"model": None}, "model: give the model", "from_ladder"),
    ("two cells of one name", {"cells": [{"name": "a"}, {"name": "a"}]}, "cells: two cells share a name", "a"),
    ("a cell name that is not a folder name", {"cells": [{"name": "../x"}]}, "cells[0].name:", "pattern"),
    ("repeats of 0", {"repeats": 0}, "repeats:", "greater than or equal to 1"),
    ("trials of 0, as files before repeats say it", {"trials": 0}, "trials:", "greater than or equal to 1"),
]


@pytest.mark.parametrize(("what", "changes", "field", "more"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_campaign_names_the_field(fake: Fake, what: str, changes: dict, field: str, more: str) -> None:
    spec = {k: v for k, v in fake.spec(**changes).items() if v is not None}
    text = error_of(fake.write(text=json.dumps(spec)))
    assert f"c1.yml: {field}" in text, text
    assert more in text, text


@pytest.mark.parametrize(
    ("what", "changes", "field"),
    [
        ("a baseline that names no cell", {"baseline": "mnbt4096"}, "baseline: no cell is named 'mnbt4096'"),
        (
            "a grid cell named like a named cell",
            {"cells": [{"name": "mnbt2048", "max_num_seqs": 8}]},
            "cells: two cells are named 'mnbt2048'",
        ),
    ],
)
def test_cross_cell_errors_name_the_field(fake: Fake, what: str, changes: dict, field: str) -> None:
    assert field in error_of(fake.write(**changes))


def test_not_yaml_and_not_a_mapping_say_so(fake: Fake) -> None:
    assert "not valid YAML at line 2, column 1" in error_of(fake.write(text="name: [c1\n"))
    assert "must be a YAML mapping" in error_of(fake.write(text="- a\n- b\n"))
    assert "no such file" in error_of(fake.campaigns / "absent.yml")


def test_a_target_not_in_the_targets_file_names_the_field(fake: Fake) -> None:
    path = fake.write(target="gpu-9")
    specs = load_targets(fake.targets_file())
    with pytest.raises(TargetConfigError) as exc:
        open_campaign_target(path, specs)
    assert str(exc.value).startswith("target: unknown target 'gpu-9'") and "known targets: local" in str(exc.value)
    assert open_campaign_target(fake.write(), specs).name == "local"


def test_comments_survive_a_round_trip(fake: Fake) -> None:
    path = fake.campaigns / "kept.yml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "# tuning llama8b under its ceiling\n"
        "name: kept\n"
        "target: local  # the box under my desk\n"
        f"model: {fake.model}\n"
        "base:\n"
        "  max_model_len: 4096\n"
        "workload: {input_len: 128, output_len: 16}\n"
        "concurrencies: [1, 4]\n"
        "grid:\n"
        "  max_num_batched_tokens: [2048, 8192]  # the knee is in here somewhere\n"
    )
    campaign = read_campaign(path)
    write_campaign(
        path, campaign.model_copy(update={"continue_on_red": True, "concurrencies": [1, 4, 16]}), replace=True
    )
    text = path.read_text()
    for comment in ("# tuning llama8b under its ceiling", "# the box under my desk", "# the knee is in here somewhere"):
        assert comment in text, text
    again = read_campaign(path)
    assert again.continue_on_red is True and again.concurrencies == [1, 4, 16]
    assert again.grid == campaign.grid


def test_campaign_init_writes_a_file_that_reads_back(fake: Fake) -> None:
    spec = read_campaign(fake.write()).model_copy(update={"name": "new"})
    path = fake.campaigns / "new.yml"
    campaign_init(path, CampaignInitRequest(spec=spec))
    assert read_campaign(path) == spec and path.read_text().startswith("# redline campaign")
    with pytest.raises(InputError, match="already there"):
        campaign_init(path, CampaignInitRequest(spec=spec))


def test_campaign_init_leaves_nothing_when_the_campaign_cannot_plan(fake: Fake) -> None:
    spec = read_campaign(fake.write(baseline="nope")).model_copy(update={"name": "bad"})
    path = fake.campaigns / "bad.yml"
    with pytest.raises(InputError, match="baseline: no cell"):
        campaign_init(path, CampaignInitRequest(spec=spec))
    assert not path.exists()


# ---- base.from_ladder ------------------------------------------------------------------------------------------------

LADDER = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"


def _with_ladder(fake: Fake) -> None:
    """The llama8b ladder redline climbed on an H200 (ceiling 131,072 x 131,072), beside the campaigns."""
    (fake.root / "ladders").mkdir()
    shutil.copy(LADDER, fake.root / "ladders" / "l8b.yml")


def test_from_ladder_takes_the_recorded_ceiling_and_the_fixed_knobs(fake: Fake) -> None:
    _with_ladder(fake)
    spec = fake.spec(base={"from_ladder": "../ladders/l8b.yml", "port": fake.port})
    del spec["model"]
    loaded = load_campaign(fake.write(text=json.dumps(spec)))
    base = loaded.base
    assert (base.model, base.max_model_len, base.max_num_batched_tokens) == ("/models/llama8b", 131072, 131072)
    assert base.load_format == "dummy" and base.gpu_memory_utilization == 0.9  # the ladder's fixed knobs
    assert base.port == fake.port  # a knob the campaign sets wins


def test_from_ladder_refuses_another_model(fake: Fake) -> None:
    _with_ladder(fake)
    text = error_of(fake.write(base={"from_ladder": "../ladders/l8b.yml"}))
    assert text.startswith("model: the campaign names") and "/models/llama8b" in text


def test_from_ladder_without_a_ceiling_says_to_finish_the_climb(fake: Fake) -> None:
    path = fake.root / "ladders" / "l8b.yml"
    path.parent.mkdir()
    ladder_init(
        path,
        LadderInitRequest(
            model="llama8b", model_path=str(fake.model), floor_max_model_len=8192, floor_max_num_batched_tokens=4096
        ),
    )
    text = error_of(fake.write(base={"from_ladder": "../ladders/l8b.yml"}))
    assert text.startswith("base.from_ladder") and "no recorded ceiling" in text


def test_from_ladder_out_of_the_workspace_is_refused(fake: Fake) -> None:
    _with_ladder(fake)
    inside = fake.write(base={"from_ladder": "../ladders/l8b.yml"})
    check_inside(inside, fake.root)
    outside = fake.write(base={"from_ladder": "../../../etc/ladder.yml"})
    said = r"base.from_ladder '../../../etc/ladder.yml' must be a path inside the workspace .*'..' leads out of the"
    with pytest.raises(InputError, match=said):
        check_inside(outside, fake.root)
    with pytest.raises(InputError, match=said):  # the loader checks it itself, whoever calls it
        load_campaign(outside)


def test_from_ladder_that_is_not_there(fake: Fake) -> None:
    text = error_of(fake.write(base={"from_ladder": "../ladders/none.yml"}))
    assert text.startswith("base.from_ladder:") and "none.yml" in text


def test_a_plan_of_a_bad_file_starts_nothing(fake: Fake) -> None:
    with pytest.raises(InputError):
        campaign_plan(fake.write(concurrencies=[0]), target=fake.target())
    assert processes_naming(fake.root) == [] and not (fake.root / "target").exists()
