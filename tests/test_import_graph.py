"""The import graph of src/redline, read from the source: no cycle, and the CLI reaches the server only to start it.

Every import counts: at module level, inside a function, and under `if TYPE_CHECKING:`.
`from redline.x import y` is an edge to redline.x.y when that is a module, else to redline.x;
a package's __init__ is the module named by the package.
"""

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import redline

SRC = Path(redline.__file__).parent
# What cli/mcp.py may import from the server: what builds it, binds it, and how long stopping its jobs may take.
SERVER_STARTERS = {"redline.server.app", "redline.server.http", "redline.server.jobs"}
# The only imports inside a function: each delays an expensive optional one (the server with the MCP SDK and
# uvicorn, only for `redline mcp`; matplotlib, only for a report's plots; tokenizers, only to train the tiny model).
LAZY = {
    "redline.cli.mcp": {"uvicorn", "redline.server.app", "redline.server.http", "redline.server.jobs"},
    "redline.ops.campaign.plots": {"matplotlib.figure"},
    "redline.tinymodel": {"tokenizers"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _files() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(name: str, modules: Mapping[str, object]) -> str | None:
    """The longest prefix of a dotted name that is one of ours (redline.x.y -> redline.x when y is a name)."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _targets(tree: ast.AST, module: str, is_package: bool, modules: Mapping[str, object]) -> Iterator[str]:
    """Every module of ours this tree imports, at any depth."""
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, is_package)
            names = [f"{source}.{alias.name}" for alias in node.names]
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                yield target


def _in_functions(tree: ast.AST) -> set[str]:
    """The modules imported inside a function (as written, our own or not)."""
    found: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    found |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom):
                    found.add("." * node.level + (node.module or ""))
    return found


def import_graph() -> dict[str, set[str]]:
    files = _files()
    return {
        name: set(_targets(ast.parse(path.read_text(encoding="utf-8")), name, path.stem == "__init__", files))
        for name, path in files.items()
    }


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (no recursion limit), each sorted, of the nodes in graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycle_path(graph: Mapping[str, set[str]], component: list[str]) -> list[str]:
    """One closed path through a component: a -> b -> a (the shortest back to its first member)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph.get(node, set()) & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return [start]


def cycles(graph: Mapping[str, set[str]]) -> list[str]:
    """Each cycle as a path a -> b -> a; where more modules share the tangle, they are named after it."""
    found = []
    for component in strongly_connected(graph):
        if len(component) == 1 and component[0] not in graph.get(component[0], ()):
            continue
        path = cycle_path(graph, component)
        others = sorted(set(component) - set(path))
        found.append(" -> ".join(path) + (f" (tangled with {', '.join(others)})" if others else ""))
    return found


def test_there_is_no_import_cycle_in_src() -> None:
    graph = import_graph()
    assert len(graph) > 100 and "redline.ops.campaign.plan" in graph
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_cycle_finder_finds_a_cycle_and_prints_its_path() -> None:
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == ["a -> b -> c -> a", "e -> e"]
    tangle = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}
    assert cycles(tangle) == ["a -> b -> a (tangled with c)"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_walker_counts_imports_in_functions_and_under_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from redline.models import ladder\n"
        "def f():\n    from redline.ops.campaign.plan import load\n"
        "from . import engines\n"
    )
    modules = {"redline.models", "redline.models.ladder", "redline.ops.campaign.plan", "redline.cli.x", "redline.cli"}
    found = set(_targets(ast.parse(source), "redline.cli.x", False, dict.fromkeys(modules)))
    assert found == {"redline.models.ladder", "redline.ops.campaign.plan", "redline.cli"}


def test_the_cli_imports_the_server_only_to_start_it() -> None:
    graph = import_graph()
    server = {
        name: sorted(t for t in targets if t == "redline.server" or t.startswith("redline.server."))
        for name, targets in graph.items()
        if name.startswith("redline.cli")
    }
    assert {k: v for k, v in server.items() if v and k != "redline.cli.mcp"} == {}
    assert server["redline.cli.mcp"], "cli/mcp.py starts the server: it imports it"
    assert set(server["redline.cli.mcp"]) <= SERVER_STARTERS


def test_nothing_is_imported_inside_a_function_but_an_expensive_optional_import() -> None:
    found = {name: _in_functions(ast.parse(path.read_text(encoding="utf-8"))) for name, path in _files().items()}
    assert {name: sorted(m - LAZY.get(name, set())) for name, m in found.items() if m - LAZY.get(name, set())} == {}
    assert _in_functions(ast.parse("async def f():\n    import json\n")) == {"json"}
