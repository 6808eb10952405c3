"""Read the JSON that `vllm bench serve --save-result` writes."""

import json

from pydantic import ValidationError

from redline.errors import InputError
from redline.models.bench import BenchResult


def parse_bench_result(text: str) -> BenchResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"the bench result is not JSON ({exc.msg} at line {exc.lineno}): pass the file `vllm bench serve --save-result` wrote") from exc
    if not isinstance(data, dict):
        raise InputError("the bench result must be a JSON object as `vllm bench serve --save-result` writes it")
    try:
        return BenchResult.model_validate(data)
    except ValidationError as exc:
        missing = ", ".join(str(e["loc"][0]) for e in exc.errors() if e["loc"])
        raise InputError(f"the bench result lacks or mistypes: {missing}; is it a `vllm bench serve --save-result` file?") from exc
