"""docs/security.md says what redline promises for each hardening class of issue 9: every class has its
section, and every test it names exists (`file::name`, or `file::prefix_*` for a family of tests)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")


def test_every_class_has_a_section_that_names_its_tests() -> None:
    sections = re.split(r"^## ", TEXT, flags=re.MULTILINE)
    numbered = {int(s.split(".", 1)[0]): s for s in sections if s[:1].isdigit()}
    assert sorted(numbered) == list(range(1, 10))
    for number, section in numbered.items():
        assert "**Promise.**" in section and "**Tests.**" in section, number
        assert re.search(r"`tests/[\w/]+\.py", section), f"class {number} names no test"


def test_every_named_test_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+)(\*)?)?", TEXT)
    assert len(named) > 15
    for path, test, family in named:
        source = ROOT / path
        assert source.exists(), path
        if test:
            pattern = rf"def {test}\w*" if family else rf"def {test}\b"
            assert re.search(pattern, source.read_text(encoding="utf-8")), f"{path}::{test}{family}"
