"""SGLang stays behind the engine seam, as vLLM does (tests/test_layering.py checks vLLM's strings)."""

import ast
from pathlib import Path

import redline
from tests.test_layering import DEMO, _code_strings


def test_nothing_outside_engines_holds_an_sglang_string():
    """No code outside engines/ holds SGLang's name: ladders, campaigns and policies ask the engine."""
    src = Path(redline.__file__).parent
    bad = {}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith("engines/") or rel in DEMO:
            continue
        hits = [s for s in _code_strings(ast.parse(path.read_text(encoding="utf-8"))) if "sglang" in s.lower()]
        if hits:
            bad[rel] = hits[:3]
    assert bad == {}
