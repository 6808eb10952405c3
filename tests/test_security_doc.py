"""docs/security.md says what redline promises for each hardening class of issue 9 (`## N.`), of issue 19
(`## 19.N.`) and for each item of issues 32 and 38 (`## 32.N.`, `## 38.N.`, with what was wrong: `**Was.**`): every class has its section, and every test it names exists (`file::name`, or `file::prefix_*` for a
family of tests)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
SECTIONS = re.split(r"^## ", TEXT, flags=re.MULTILINE)
ROUND_ONE = {int(m.group(1)): s for s in SECTIONS if (m := re.match(r"(\d+)\. ", s))}
ROUND_TWO = {int(m.group(1)): s for s in SECTIONS if (m := re.match(r"19\.(\d+)\. ", s))}
ROUND_THREE = {int(m.group(1)): s for s in SECTIONS if (m := re.match(r"32\.(\d+)\. ", s))}
ROUND_FOUR = {int(m.group(1)): s for s in SECTIONS if (m := re.match(r"38\.(\d+)\. ", s))}
ISSUE_38_ITEMS = set(range(1, 11))  # every item of issue 38, each with its 38.N section
# Issue 19's classes closed so far; each other class adds its number here with its section.
ISSUE_19_CLASSES = set(range(1, 11))  # every class of issue 19, each with its 19.N section


def _promises_and_tests(number: str, section: str) -> None:
    assert "**Promise.**" in section and "**Tests.**" in section, number
    assert re.search(r"`tests/[\w/]+\.py", section), f"class {number} names no test"


def test_every_class_has_a_section_that_names_its_tests() -> None:
    assert sorted(ROUND_ONE) == list(range(1, 10))
    for number, section in ROUND_ONE.items():
        _promises_and_tests(str(number), section)


def test_every_issue_19_class_has_a_section_that_names_its_tests() -> None:
    assert ISSUE_19_CLASSES <= set(ROUND_TWO) <= set(range(1, 11))
    for number, section in ROUND_TWO.items():
        _promises_and_tests(f"19.{number}", section)


def test_every_issue_32_item_has_a_section_that_says_what_was_wrong_and_names_its_tests() -> None:
    assert sorted(ROUND_THREE) == list(range(1, 9))
    for number, section in ROUND_THREE.items():
        _promises_and_tests(f"32.{number}", section)
        assert "**Was.**" in section, f"32.{number}"


def test_every_issue_38_item_has_a_section_that_says_what_was_wrong_and_names_its_tests() -> None:
    assert sorted(ROUND_FOUR) == sorted(ISSUE_38_ITEMS)
    for number, section in ROUND_FOUR.items():
        _promises_and_tests(f"38.{number}", section)
        assert "**Was.**" in section, f"38.{number}"


def test_every_named_test_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+)(\*)?)?", TEXT)
    assert len(named) > 15
    for path, test, family in named:
        source = ROOT / path
        assert source.exists(), path
        if test:
            pattern = rf"def {test}\w*" if family else rf"def {test}\b"
            assert re.search(pattern, source.read_text(encoding="utf-8")), f"{path}::{test}{family}"
