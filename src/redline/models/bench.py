"""One bench run: the workload it sends, and the figures its result file says.

A result file is untrusted input (issue 19, class 7): a figure is a finite number from 0 to a bound no real
bench reaches, a count a whole number from 0 to a bound; NaN, Infinity, a negative latency or throughput, or an
absurd magnitude is refused with the field named, so nothing non-finite reaches a verdict or baselines.yml.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Count = Annotated[int, Field(gt=0, le=1 << 26)]
MAX_FIGURE = 1e12  # tokens/s, requests/s, milliseconds or seconds: a trillion is past any real bench
MAX_TOKENS = 1 << 53  # tokens in one bench run: past any real one, and exact as a float
Figure = Annotated[float, Field(ge=0, le=MAX_FIGURE, allow_inf_nan=False)]
Requests = Annotated[int, Field(ge=0, le=1 << 26)]
TotalTokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
LongName = Annotated[str, Field(max_length=4096)]  # a path or hub id, as a result file names it


class BenchWorkload(BaseModel):
    """What one bench run sends: random prompts of fixed lengths, or a trace's requests (its lengths, fresh prompts);
    closed loop at one concurrency, open loop at one request rate, or at the trace's own arrivals sped up."""

    model_config = ConfigDict(extra="forbid")

    dataset: Literal["random", "trace"] = "random"
    input_len: Count = Field(description="random: each prompt's tokens; trace: its longest prompt's")
    output_len: Count = Field(description="random: each request's output tokens; trace: its longest output")
    concurrency: Count | None = Field(None, description="closed loop: requests in flight; null: open loop")
    rate: float | None = Field(None, gt=0, le=1e4, description="open loop: requests/s asked; null: closed loop")
    burstiness: float = Field(1.0, gt=0, le=100, description="with rate: the arrivals' gamma shape (1: Poisson)")
    speedup: float | None = Field(None, gt=0, le=1e3, description="a trace at its own arrivals, this many times faster")
    paced_rate: float | None = Field(
        None, gt=0, description="at a trace's arrivals: the mean rate they ask (requests/s), what the client must send"
    )
    trace_file: str | None = Field(
        None, max_length=255, description="a trace bench: the file of its requests, beside its result"
    )
    num_prompts: Count
    seed: int | None = None
    range_ratio: float = Field(0.0, ge=0, lt=1, description="lengths drawn from length x (1 +- range_ratio)")
    prefix_len: int = Field(0, ge=0, description="tokens every prompt of the bench shares at its start")

    @model_validator(mode="after")
    def _one_load(self) -> "BenchWorkload":
        if sum(x is not None for x in (self.concurrency, self.rate, self.speedup)) != 1:
            raise ValueError("a bench runs at a concurrency, a rate or a trace's arrivals sped up: give one")
        if (self.dataset == "trace") != (self.trace_file is not None) or (self.speedup and self.dataset != "trace"):
            raise ValueError("a trace bench names its trace_file, and only a trace bench replays arrivals")
        return self

    @property
    def asked_rate(self) -> float | None:
        """The mean rate an open-loop bench asks its client to send (requests/s): its rate, or its trace's arrivals'."""
        return self.rate if self.rate is not None else self.paced_rate

    @property
    def shared(self) -> float:
        """The largest share of the bench's prompt tokens its shared prefix can find in the prefix cache."""
        return self.prefix_len / (self.prefix_len + self.input_len * (1 - self.range_ratio))


class BenchResult(BaseModel):
    """The figures of one bench run; the workload travels with them."""

    model_config = ConfigDict(extra="ignore")

    backend: LongName | None = None
    model_id: LongName | None = None
    num_prompts: Requests
    max_concurrency: Requests | None = None
    max_concurrent_requests: Requests | None = Field(None, description="the most requests the client had in flight")
    completed: Requests
    failed: Requests = 0
    duration: Figure
    total_input_tokens: TotalTokens | None = None
    total_output_tokens: TotalTokens | None = None
    request_throughput: Figure | None = None
    output_throughput: Figure | None = None
    total_token_throughput: Figure | None = None
    mean_ttft_ms: Figure | None = None
    median_ttft_ms: Figure | None = None
    p99_ttft_ms: Figure | None = None
    mean_tpot_ms: Figure | None = None
    median_tpot_ms: Figure | None = None
    p99_tpot_ms: Figure | None = None
    median_itl_ms: Figure | None = None
    p99_itl_ms: Figure | None = None
    request_rate: Figure | Literal["inf"] | None = Field(
        None, description="the rate the client was asked for (requests/s); inf: all at once (closed loop)"
    )
    burstiness: Figure | None = None
    # Derived by the reader from the client's per-request figures (an open-loop bench saves them), never taken from
    # the file: what the client sent, and what met the per-request SLO it was read against.
    sent_rate: Figure | None = Field(
        None, description="requests/s the client sent: (requests - 1) / the span of their send times"
    )
    goodput_slo: dict[str, Figure] | None = Field(
        None, description="the per-request limits goodput was counted against (ttft_ms, tpot_ms)"
    )
    good_requests: Requests | None = Field(None, description="requests that met every per-request limit")
    goodput_requests: Figure | None = Field(None, description="good requests per second of the run")
    goodput_output_throughput: Figure | None = Field(None, description="good requests' output tokens per second")

    @property
    def all_completed(self) -> bool:
        return self.failed == 0 and self.completed == self.num_prompts


DERIVED = ("sent_rate", "goodput_slo", "good_requests", "goodput_requests", "goodput_output_throughput")
PER_REQUEST = ("start_times", "ttfts", "latencies", "output_lens")
