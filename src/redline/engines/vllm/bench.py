"""Read the JSON that `vllm bench serve --save-result` writes: untrusted input, refused a field at a time."""

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from redline.errors import InputError
from redline.models.bench import MAX_FIGURE, BenchResult
from redline.untrusted import load_json

HINT = "is it a `vllm bench serve --save-result` file?"


def _problem(error: ErrorDetails) -> str:
    field = ".".join(str(part) for part in error["loc"]) or "the result"
    kind, given = error["type"], error.get("input")
    if kind == "missing":
        return f"{field}: missing"
    if kind == "finite_number":
        return f"{field} is {given!r}: a figure must be a finite number (not NaN or Infinity)"
    if kind.startswith("greater_than"):
        return f"{field} is {given!r}: it must not be negative"
    if kind.startswith("less_than"):
        return f"{field} is {given!r}: over {(error.get('ctx') or {}).get('le', MAX_FIGURE):g}, past any real bench"
    shown = repr(given) if len(repr(given)) <= 40 else f"{repr(given)[:40]}..."
    return f"{field} is {shown}: {error['msg'].lower()}"


def parse_bench_result(text: str) -> BenchResult:
    data: Any = load_json(text, "the bench result", hint=": pass the file `vllm bench serve --save-result` wrote")
    if not isinstance(data, dict):
        raise InputError("the bench result must be a JSON object as `vllm bench serve --save-result` writes it")
    try:
        return BenchResult.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise InputError(f"the bench result is refused: {problems}; {HINT}") from exc
