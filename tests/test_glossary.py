"""One word per idea, one idea per word: docs/architecture.md's table of words, held against the source.

Every definition the table names exists where it says. A word that is a token of a public definition's name (a class,
function or constant at a module's top: `TrialRecord`, `read_trial`, `TRIAL`) may stand only in the names its row
lists: a new `*Step` or `judge` elsewhere is a second meaning of the word, and fails here until it is renamed or the
table says why it is the same idea.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import redline

SRC = Path(redline.__file__).parent
ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"
ROW = re.compile(r"^\| ([a-z][a-z ]*) \| (.+) \| (.*) \|$")
REF = re.compile(r"`([a-z_/]+\.py) ([A-Za-z_][A-Za-z0-9_]*)`")


def glossary() -> dict[str, set[tuple[str, str]]]:
    """Each word of the table, and the definitions (module, name) its row names."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text[text.index("| word | its one meaning | in the code |") :].split("\n\n")[0]
    rows = (ROW.match(line) for line in table.splitlines()[2:])
    return {m.group(1): set(REF.findall(m.group(3))) for m in rows if m is not None}


def held_whole() -> list[str]:
    """The words whose rows list every public definition that holds them (the table's own sentence says which)."""
    line = next(x for x in ARCHITECTURE.read_text(encoding="utf-8").split("\n") if x.startswith("table and holds"))
    return [w.strip(" .") for w in line.split("Held whole:")[1].split(",")]


def tokens(name: str) -> set[str]:
    """A name's words, lower case: `TrialRecord` and `read_trial` both hold "trial"."""
    return {t for t in re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower().split("_") if t}


def public_definitions() -> set[tuple[str, str]]:
    """(module under src/redline, name) of every public class, function and constant at a module's top."""
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            found |= {(rel, n) for n in names if not n.startswith("_") and n != "__all__"}
    return found


def test_the_glossary_names_only_definitions_that_exist() -> None:
    defined = public_definitions()
    missing = {word: sorted(refs - defined) for word, refs in glossary().items() if refs - defined}
    assert missing == {}


@pytest.mark.parametrize("word", held_whole())
def test_a_word_names_no_definition_but_those_its_row_lists(word: str) -> None:
    """The word (or its plural) as a token of a public name stands only where its row says: one idea."""
    listed = glossary()[word]
    using = {d for d in public_definitions() if {word, word + "s"} & tokens(d[1])}
    assert sorted(using - listed) == []


def test_the_table_holds_the_words_the_issue_found_colliding() -> None:
    """verdict, step and judge had several meanings each, and a clean measured boot three names: each has one row."""
    assert {"verdict", "step", "judge", "measured boot", "unit", "trial", "replicate", "repeat"} <= set(glossary())
    assert set(held_whole()) <= set(glossary())
