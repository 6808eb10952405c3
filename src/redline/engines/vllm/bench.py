"""Read the JSON that `vllm bench serve --save-result` writes: untrusted input, refused a field at a time.

An open-loop bench (a request rate, a trace) also saves its per-request figures (--save-detailed): each request's
send time, time to first token, latency and output tokens. From them the reader derives what the client sent (its
send rate) and, against per-request limits (`slo`: ttft_ms, tpot_ms), the goodput: the requests that met every
limit, per second, and their output tokens per second (DistServe's goodput, as vLLM's --goodput counts requests).
Those derived figures are the reader's alone: a file that states them is not believed.
"""

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from redline.errors import InputError
from redline.models.bench import DERIVED, MAX_FIGURE, PER_REQUEST, BenchResult, Figure
from redline.untrusted import load_json

Each = Annotated[list[Figure], Field(max_length=1 << 22)]
Maybe = Annotated[list[Figure | None], Field(max_length=1 << 22)]


class PerRequest(BaseModel):
    """The per-request figures an open-loop bench saves: seconds (send times on the client's clock, TTFTs,
    latencies) and output tokens, in request order."""

    model_config = ConfigDict(extra="ignore")

    start_times: Each
    ttfts: Maybe
    latencies: Each
    output_lens: Annotated[list[Annotated[int, Field(ge=0, le=1 << 26)]], Field(max_length=1 << 22)]


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


def _validated(model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise InputError(f"the bench result is refused: {problems}; {HINT}") from exc


def parse_bench_result(text: str, slo: Mapping[str, float] | None = None) -> BenchResult:
    """The figures of one result file; with the per-request figures an open-loop bench saves, its send rate and,
    against `slo` (per-request limits: ttft_ms, tpot_ms), its goodput."""
    data: Any = load_json(text, "the bench result", hint=": pass the file `vllm bench serve --save-result` wrote")
    if not isinstance(data, dict):
        raise InputError("the bench result must be a JSON object as `vllm bench serve --save-result` writes it")
    result: BenchResult = _validated(BenchResult, {k: v for k, v in data.items() if k not in DERIVED})
    if not all(isinstance(data.get(k), list) for k in PER_REQUEST):
        return result
    each: PerRequest = _validated(PerRequest, {k: data[k] for k in PER_REQUEST})
    return result.model_copy(update=derived(result, each, slo))


def derived(result: BenchResult, each: PerRequest, slo: Mapping[str, float] | None) -> dict[str, Any]:
    """The send rate, and with `slo` the goodput, of a result and its per-request figures."""
    found: dict[str, Any] = {"sent_rate": sent_rate(each.start_times)}
    if slo is None or result.duration <= 0:
        return found
    good = [i for i in range(len(each.ttfts)) if _good(each, i, slo)]
    tokens = sum(each.output_lens[i] for i in good if i < len(each.output_lens))
    return found | {
        "goodput_slo": dict(slo),
        "good_requests": len(good),
        "goodput_requests": len(good) / result.duration,
        "goodput_output_throughput": tokens / result.duration,
    }


def sent_rate(starts: Sequence[float]) -> float | None:
    """Requests per second the client sent: (n - 1) over the span from the first send to the last (vLLM's client
    spaces n requests at a rate r over about (n - 1) / r); None for fewer than two, or all at once."""
    if len(starts) < 2:
        return None
    span = max(starts) - min(starts)
    return (len(starts) - 1) / span if span > 0 else None


def _good(each: PerRequest, i: int, slo: Mapping[str, float]) -> bool:
    """Whether request i completed within every per-request limit (a failed one, no tokens out, never is)."""
    ttft, out = each.ttfts[i], each.output_lens[i] if i < len(each.output_lens) else 0
    latency = each.latencies[i] if i < len(each.latencies) else 0.0
    if ttft is None or out <= 0 or not math.isfinite(ttft):
        return False
    tpot = (latency - ttft) / (out - 1) if out > 1 else 0.0
    return ttft * 1000 <= slo.get("ttft_ms", math.inf) and tpot * 1000 <= slo.get("tpot_ms", math.inf)
