"""METHODOLOGY.md is the canon: every module and test it names exists (so a rename cannot leave a rule pointing
at nothing), and every A/B rule the code checks has its own section."""

from __future__ import annotations

import re
from pathlib import Path

from redline.models.verdict import RULES

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "METHODOLOGY.md").read_text(encoding="utf-8")


def test_every_named_test_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", TEXT)
    assert len(named) > 10
    for path, test in named:
        source = ROOT / path
        assert source.exists(), path
        if test:
            assert re.search(rf"def {test}\b", source.read_text(encoding="utf-8")), f"{path}::{test}"


def test_every_named_module_exists() -> None:
    modules = set(re.findall(r"`((?:models|policy|tools|ledger|engines|targets|server|data)/[\w./-]+)`", TEXT))
    modules |= set(re.findall(r"`src/redline/([\w./-]+)`", TEXT))
    assert len(modules) > 8
    for module in modules:
        assert (ROOT / "src" / "redline" / module).exists(), module


def test_every_ab_rule_has_its_section() -> None:
    for rule in RULES:
        assert f"**`{rule}`.**" in TEXT or f"`{rule}`" in TEXT, rule
        assert f"rule_{rule}" in TEXT, f"{rule}: name the function that checks it"
