"""Read the JSON that `vllm bench serve --save-result` writes."""

from pydantic import ValidationError

from redline.errors import InputError
from redline.models.bench import BenchResult
from redline.untrusted import load_json


def parse_bench_result(text: str) -> BenchResult:
    data = load_json(text, "the bench result", hint=": pass the file `vllm bench serve --save-result` wrote")
    if not isinstance(data, dict):
        raise InputError("the bench result must be a JSON object as `vllm bench serve --save-result` writes it")
    try:
        return BenchResult.model_validate(data)
    except ValidationError as exc:
        missing = ", ".join(str(e["loc"][0]) for e in exc.errors() if e["loc"])
        raise InputError(
            f"the bench result lacks or mistypes: {missing}; is it a `vllm bench serve --save-result` file?"
        ) from exc
