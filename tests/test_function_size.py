"""The house's size rules, from the source: no function in src/redline over 40 lines, no module over 400.

A function's length is from its `def` line (decorators not counted) to its last line, as ast's lineno and
end_lineno count it; a nested function counts in its own right and inside the one that holds it.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "redline"
MAX_FUNCTION_LINES = 40
MAX_MODULE_LINES = 400


def long_functions(source: str, where: str) -> list[str]:
    """`where:line name (N lines)` for each function of `source` over MAX_FUNCTION_LINES."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                out.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return out


def _modules() -> list[Path]:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 100, f"found only {len(modules)} modules under {SRC}"  # the walk sees the package
    return modules


def test_no_function_over_40_lines() -> None:
    found = [f for p in _modules() for f in long_functions(p.read_text(encoding="utf-8"), str(p.relative_to(SRC)))]
    assert not found, (
        f"{len(found)} function(s) over {MAX_FUNCTION_LINES} lines: split each by responsibility "
        "(a pure decision out of an I/O function, a validation step, a builder of one output):\n" + "\n".join(found)
    )


def test_no_module_over_400_lines() -> None:
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}
    found = [f"{p.relative_to(SRC)} ({n} lines)" for p, n in sizes.items() if n > MAX_MODULE_LINES]
    assert not found, (
        f"{len(found)} module(s) over {MAX_MODULE_LINES} lines: split each by what it holds:\n" + "\n".join(found)
    )


def _function(body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines - 1))
    return f"{indent}async def f():\n{body}{indent}    return 0\n"


def test_the_count_is_def_to_last_line() -> None:
    assert long_functions(_function(MAX_FUNCTION_LINES - 1), "m.py") == []  # 40 lines: the def and 39
    assert long_functions(_function(MAX_FUNCTION_LINES), "m.py") == ["m.py:1 f (41 lines)"]
    decorated = "@decorator\n" * 5 + _function(MAX_FUNCTION_LINES - 1)
    assert long_functions(decorated, "m.py") == []  # decorators are not the function's lines


def test_a_long_method_and_a_long_nested_function_are_named() -> None:
    method = "class C:\n" + _function(MAX_FUNCTION_LINES, indent="    ")
    assert long_functions(method, "c.py") == ["c.py:2 f (41 lines)"]
    nested = "def outer():\n" + _function(MAX_FUNCTION_LINES, indent="    ") + "    return f\n"
    assert long_functions(nested, "n.py") == ["n.py:1 outer (43 lines)", "n.py:2 f (41 lines)"]
