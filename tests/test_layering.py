"""The house's import rules, read from the source: arrows point down, and engines stay behind their interface."""

import ast
from pathlib import Path

import pytest

import redline

SRC = Path(redline.__file__).parent
# The layers below the operations, and the server config file, which both the server and the CLI read.
LOWER = ("engines", "targets", "ledger", "models", "policy", "server_config.py")
UPPER = ("redline.ops", "redline.server", "redline.cli")
# The built-in demo is the default engine's CPU build by definition: its flag and paths name it.
DEMO = ("cli/demo.py", "ops/ladder/demo.py")


def _modules(folder: Path = SRC) -> list[Path]:
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [folder]


def _imports(path: Path) -> set[str]:
    """Every module path imports, at any depth (imports inside functions count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _rel(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"
ORDER_LINE = "Layers, lowest first: "
# The one name a lower layer may take from a higher one: the engines' registry of names (engines/names.py, constants
# and one field type, no engine code), which models name engines by.
NAMES = "redline.engines.names"


def _order() -> list[list[str]]:
    """The layers as docs/architecture.md states them, lowest first; a layer of several names (`a | b`) ranks them
    alike: none of them imports another."""
    line = next(line for line in ARCHITECTURE.read_text().splitlines() if line.startswith(ORDER_LINE))
    return [[name.strip(" `") for name in rank.split("|")] for rank in line.removeprefix(ORDER_LINE).split("->")]


def _layer_of(rel: str) -> str:
    """A module's layer: its folder under src/redline, or, for a module at the top, its own name."""
    return rel.split("/")[0].removesuffix(".py")


def test_every_import_points_down_the_order_docs_architecture_states() -> None:
    """models -> engines -> targets | policy -> ledger -> ... -> cli: a module imports only from its own layer or one
    below it (the one exception, engines/names.py, named), and the stated order names every module's layer."""
    rank = {name: i for i, names in enumerate(_order()) for name in names}
    bad = []
    for path in _modules():
        rel, here = _rel(path), _layer_of(_rel(path))
        assert here in rank or here in ("__init__", "__main__"), f"{rel}: its layer {here!r} is not in the order"
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] != "redline" or len(parts) < 2 or module.startswith(NAMES) or here in ("__init__", "__main__"):
                continue
            there = parts[1]
            if there in rank and rank[there] > rank[here] and not (here == "cli" and there == "server"):
                bad.append(f"{rel} imports {module} ({there} is above {here})")
    assert bad == []


def test_the_server_is_started_by_one_cli_module_alone() -> None:
    server = ("redline.server", "redline.server.")
    users = [
        _rel(p) for p in _modules(SRC / "cli") if any(m.startswith(server[1]) or m == server[0] for m in _imports(p))
    ]
    assert users == ["cli/mcp.py"]


@pytest.mark.parametrize("layer", LOWER)
def test_lower_layers_import_nothing_from_tools_server_or_cli(layer: str) -> None:
    assert (SRC / layer).exists()
    bad = {_rel(p): sorted(m for m in _imports(p) if m.startswith(UPPER)) for p in _modules(SRC / layer)}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_server_imports_nothing_from_the_cli() -> None:
    """The CLI starts the server (cli/mcp.py; tests/test_import_graph.py holds it to that); never the other way."""
    bad = {_rel(p): sorted(m for m in _imports(p) if m.startswith("redline.cli")) for p in _modules(SRC / "server")}
    assert {k: v for k, v in bad.items() if v} == {}


# What anything may import from engines/: the interface and the names (engines/names.py: the registry, the default).
INTERFACE = ("__init__", "base", "names", "__pycache__")


def _engine_modules() -> set[str]:
    """redline.engines.vllm and its like: every engine package or module but the interface and the names."""
    return {f"redline.engines.{p.stem}" for p in (SRC / "engines").iterdir() if p.stem not in INTERFACE}


def test_nothing_outside_engines_imports_an_engine_module_by_name() -> None:
    engines = _engine_modules()
    assert "redline.engines.vllm" in engines
    bad = {}
    for path in _modules():
        if _rel(path).startswith("engines/"):
            continue
        named = sorted(m for m in _imports(path) if any(m == e or m.startswith(e + ".") for e in engines))
        if named:
            bad[_rel(path)] = named
    assert bad == {}


def _code_strings(tree: ast.AST) -> list[str]:
    """String constants that are not docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_no_code_outside_engines_knows_an_engine_string() -> None:
    bad = {}
    for path in _modules():
        rel = _rel(path)
        if rel.startswith("engines/") or rel in DEMO:
            continue
        hits = [s for s in _code_strings(ast.parse(path.read_text(encoding="utf-8"))) if "vllm" in s.lower()]
        if hits:
            bad[rel] = hits[:3]
    assert bad == {}


def test_the_import_walker_sees_a_function_level_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from redline.server.app import build_server\n")
    assert "redline.server.app" in _imports(module)
