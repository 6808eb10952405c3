"""What a bench is checked for before its figures are ranked: a prefix cache it hit without asking, a client that
could not keep the concurrency (or send the rate) asked of it, the window its figures cover, another process on its
GPU, and a GPU throttled or faulted while it ran."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# One kind per thing a bench is checked for; a check that fails keeps the bench's figures out of every verdict, with
# what it said as the reason (a new flag is a new kind here, judged where the bench is: ops/measured_boot.py).
Check = Literal["prefix_cache", "client", "window", "gpu", "gpu_health", "rate", "figures"]


class BenchCheck(BaseModel):
    """One check of one bench: whether it holds, what it saw, and what it means for the figure."""

    model_config = ConfigDict(extra="forbid")

    check: Check
    ok: bool = Field(description="false: the bench is flagged; its figures are not ranked")
    said: str
    clean_by: Literal["emptied", "fresh prompts"] | None = Field(
        None,
        description="the prefix-cache check's: what kept the bench's cache clean: emptied just before it (the engine's "
        "reset), or fresh prompts on a server that served no other client's (docs/security.md, 38.1); null: neither, "
        "so it is held to finding at most 1% of its prompt tokens cached",
    )


class PrefixCounters(BaseModel):
    """The server's prefix-cache counters at one moment (tokens looked up, and found), from its metrics endpoint."""

    model_config = ConfigDict(extra="forbid")

    queries: float = Field(ge=0)
    hits: float = Field(ge=0)


__all__ = ["BenchCheck", "Check", "PrefixCounters"]
