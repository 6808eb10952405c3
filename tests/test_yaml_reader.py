"""One reader for every YAML text redline parses (docs/security.md, 38.2): `untrusted.parse_yaml` (and its round-trip
twin for a file written back as it was, `parse_yaml_as_written`) checks size, nodes, depth, aliases and long integers
before a loader builds anything. No other module of redline calls a YAML loader, a parser, or ruamel's loading
helpers; every reader (campaign, A/B, search, targets, server config, values, ladders, packaged files) goes through
it, and a flat list past the node budget is refused by each in a fraction of a second."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

import redline
from redline.errors import InputError, RedlineError
from redline.untrusted import MAX_YAML_NODES, parse_yaml

SRC = Path(redline.__file__).parent
READER = "untrusted.py"
# What builds objects from YAML text: a loader's methods, ruamel's module-level helpers, its C parser, and PyYAML.
LOADING_METHODS = {"load", "load_all", "compose", "compose_all", "parse", "scan"}
LOADING_NAMES = {"load_yaml_guess_indent", "round_trip_load", "round_trip_load_all", "safe_load", "CParser", "CLoader"}
# Receivers of a .load/.parse that are no YAML loader: other formats, and the ledger's own YAML module (its load and
# parse go through the reader, as this test checks of it like any other module).
NOT_YAML = {"json", "ast", "tomllib", "pickle", "yamlfile"}


def _ruamel_or_yaml(module: str) -> bool:
    return module == "yaml" or module.startswith(("yaml.", "ruamel"))


def offences(path: Path) -> list[str]:
    """Where a module parses YAML itself: a loading call on anything but a non-YAML module, a loading helper
    imported, or PyYAML imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _ruamel_or_yaml(node.module):
            found += [f"imports {a.name} from {node.module}" for a in node.names if a.name in LOADING_NAMES]
            if node.module == "yaml" or node.module.startswith("yaml."):
                found.append(f"imports from {node.module} (PyYAML)")
        elif isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name == "yaml" or a.name.startswith("yaml.")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if node.func.attr in LOADING_METHODS and not (isinstance(receiver, ast.Name) and receiver.id in NOT_YAML):
                found.append(f"line {node.lineno}: .{node.func.attr}(...)")
            if node.func.attr in LOADING_NAMES:
                found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Name) and node.id in LOADING_NAMES:
            found.append(f"line {node.lineno}: {node.id}")
    return found


def test_no_module_parses_yaml_except_through_the_one_reader() -> None:
    bad = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == READER or "/data/" in f"/{rel}":  # the reader itself; scripts that regenerate shipped tables
            continue
        if hits := offences(path):
            bad[rel] = hits
    assert bad == {}


def test_the_check_sees_a_module_that_parses_yaml_itself(tmp_path: Path) -> None:
    planted = tmp_path / "m.py"
    planted.write_text(
        "from ruamel.yaml import YAML\nfrom ruamel.yaml.util import load_yaml_guess_indent\n"
        "def f(t):\n    return YAML(typ='safe').load(t), json.loads(t), ast.parse(t)\n"
    )
    assert sorted(offences(planted)) == ["imports load_yaml_guess_indent from ruamel.yaml.util", "line 4: .load(...)"]


def flat_list(items: int) -> str:
    """A flat list of short items: one node per item, past the budget however it is read."""
    return "- 1\n" * items


def test_the_reader_refuses_past_the_node_budget_before_a_loader_builds_anything() -> None:
    assert parse_yaml(flat_list(1000), "f.yml") == [1] * 1000
    t0 = time.monotonic()
    with pytest.raises(InputError, match="f.yml holds over 400,000 YAML nodes"):
        parse_yaml(flat_list(MAX_YAML_NODES), "f.yml")
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("a: &x 1\nb: *x\n", "uses a YAML alias (*x): redline reads YAML alias-free"),
        ("a: " + "[" * 70 + "]" * 70 + "\n", "nests deeper than 64 levels"),
        ("a: " + "9" * 5000 + "\n", "f.yml: a is a number of 5,000 digits"),
        ("name: [c1\n", "f.yml: not valid YAML at line 2, column 1"),
        ("a: 1\na: 2\n", "f.yml: not valid YAML"),  # a duplicate key, which the events allow and the loader refuses
    ],
)
def test_the_reader_refuses_aliases_depth_long_integers_and_bad_yaml_naming_the_file(text: str, said: str) -> None:
    from ruamel.yaml import YAML

    for loader in (None, YAML(typ="rt")):
        with pytest.raises(RedlineError) as refused:
            parse_yaml(text, "f.yml", loader=loader)
        assert said in str(refused.value)
        assert "redline's files" not in str(refused.value)


def test_every_reader_takes_the_flat_list_past_the_budget_in_well_under_a_second(tmp_path: Path) -> None:
    """The issue's campaign file (one flat list of millions of items, under the 16 MiB cap) and its like for every
    other file kind: each refused naming the budget, none built."""
    from redline.inputs import load_yaml
    from redline.ledger.campaign_file import read_campaign
    from redline.ledger.ladder_file import read_ladder
    from redline.models.ab import AbSpec
    from redline.server_config import load_server_config
    from redline.targets.config import load_targets

    bomb = "cells:\n" + "- 1\n" * 3_900_000  # 15.6 MB
    readers = {
        "campaign": (tmp_path / "campaigns" / "c.yml", read_campaign),
        "ladder": (tmp_path / "ladders" / "l.yml", read_ladder),
        "targets": (tmp_path / "targets.yml", load_targets),
        "server config": (tmp_path / "server.yml", load_server_config),
        "A/B spec": (tmp_path / "ab.yml", lambda p: load_yaml(p, AbSpec, "A/B spec")),
    }
    for what, (path, read) in readers.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(bomb)
        t0 = time.monotonic()
        with pytest.raises(RedlineError, match=r"over (400|50),000 YAML nodes"):
            read(path)
        took = time.monotonic() - t0
        assert took < 5, (what, took)  # well under a second on an idle core: a bound for a busy host, not a timing
