"""The JSON Schemas in schemas/ are the models' own: regenerate with `python -m redline.schemas schemas`."""

from pathlib import Path

import pytest

from redline.schemas import MODELS, render

SCHEMAS = Path(__file__).parent.parent / "schemas"


@pytest.mark.parametrize("stem", sorted(MODELS))
def test_schema_file_matches_model(stem):
    path = SCHEMAS / f"{stem}.schema.json"
    assert path.exists(), f"{path} is missing: run `python -m redline.schemas schemas`"
    assert path.read_text() == render(MODELS[stem]), f"{path} drifted from its model: regenerate it"


def test_boot_status_enum_is_in_the_schema():
    assert "oom_kv_cache" in (SCHEMAS / "boot-signals.schema.json").read_text()
