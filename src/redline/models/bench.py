"""One bench run: the workload it sends, and the figures its result file says."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Count = Annotated[int, Field(gt=0, le=1 << 26)]


class BenchWorkload(BaseModel):
    """What one bench run sends: random prompts of fixed lengths at one concurrency."""

    model_config = ConfigDict(extra="forbid")

    dataset: Literal["random"] = "random"
    input_len: Count
    output_len: Count
    concurrency: Count
    num_prompts: Count
    seed: int | None = None


class BenchResult(BaseModel):
    """The figures of one bench run; the workload travels with them."""

    model_config = ConfigDict(extra="ignore")

    backend: str | None = None
    model_id: str | None = None
    num_prompts: int
    max_concurrency: int | None = None
    completed: int
    failed: int = 0
    duration: float
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    median_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    median_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    median_itl_ms: float | None = None
    p99_itl_ms: float | None = None

    @property
    def all_completed(self) -> bool:
        return self.failed == 0 and self.completed == self.num_prompts
