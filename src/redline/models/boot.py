"""What a boot log says: the signals and the status."""

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from redline.engines.names import DEFAULT_ENGINE


class BootStatus(StrEnum):
    """How a boot ended. `oom_*` is a memory ceiling; `crash_*` is a failure to diagnose."""

    BOOT_OK = "boot_ok"
    OOM_KV_CACHE = "oom_kv_cache"  # the KV cache cannot hold one max-length request
    OOM_CUDA = "oom_cuda"  # torch ran out of device memory while loading or profiling
    OOM_WARMUP = "oom_warmup"  # out of memory while warming up the sampler
    CRASH_CONFIG = "crash_config"  # a flag or config value the engine refused
    CRASH_ENV = "crash_env"  # the host or environment: devices, ports, env vars
    CRASH_IMPORT = "crash_import"  # the engine's code could not be imported
    CRASH_UNKNOWN = "crash_unknown"  # failed, and no known cause matched
    TIMEOUT_BOOT = "timeout_boot"  # the deadline passed before the server answered
    BOOT_INCOMPLETE = "boot_incomplete"  # the log stops before ready or an error

    @property
    def booted(self) -> bool:
        return self is BootStatus.BOOT_OK

    @property
    def is_context_failure(self) -> bool:
        """A failure that a smaller context or batch could avoid."""
        return self in (BootStatus.OOM_KV_CACHE, BootStatus.OOM_CUDA, BootStatus.OOM_WARMUP)


# The torch.compile cache a boot found, as its log says: cold (it compiled, and vLLM's profile counts what compiling
# held), warm (it loaded what an earlier boot compiled), unused (it compiled nothing: eager, or compilation off).
CompileCache = Literal["cold", "warm", "unused"]


class MemoryBreakdown(BaseModel):
    """Where the device memory went, as the engine reports it, in GiB."""

    model_config = ConfigDict(extra="forbid")

    weights_gib: float | None = None
    peak_activation_gib: float | None = None
    non_torch_gib: float | None = None
    cudagraph_gib: float | None = None
    cudagraph_estimate_gib: float | None = Field(
        None,
        description="the CUDA graph memory the engine's profile estimated before sizing the KV cache and took from "
        "it, where its log says so",
    )
    device_total_gib: float | None = None
    requested_gib: float | None = None


class BootTimings(BaseModel):
    """Seconds the engine reported for the phases of its start."""

    model_config = ConfigDict(extra="forbid")

    init_engine_s: float | None = None
    compile_s: float | None = None
    model_load_s: float | None = None


class ModelLoad(BaseModel):
    """How a boot loaded the model's weights, from its log: how much, how fast, and what that proves."""

    model_config = ConfigDict(extra="forbid")

    load_format: str | None = None  # as the log says it (None: it does not)
    weights_gib: float | None = None
    seconds: float | None = None
    mb_per_s: float | None = None  # decimal MB per second, as storage is rated (None: nothing read, or unknown)
    proves_loading: bool  # False for dummy weights: nothing was read
    slow: bool  # a real load of a large model under the rate a deploy should stop at
    note: str


class BootSignals(BaseModel):
    """Everything a boot log says, null where it does not say.

    The field names and order are the public `parse-log --json` contract.
    """

    model_config = ConfigDict(extra="forbid")

    engine: str = DEFAULT_ENGINE
    engine_version: str | None = None
    status: BootStatus
    reason: str
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    available_kv_cache_gib: float | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    kv_cache_needed_gib: float | None = None
    estimated_max_model_len: int | None = None
    memory: MemoryBreakdown = MemoryBreakdown()
    timings: BootTimings = BootTimings()
    warnings: list[str] = []
    load_format: str | None = None
    model_load: ModelLoad | None = None
    compile_cache: CompileCache | None = Field(
        None,
        description="the torch.compile cache the boot found: cold (compiled), warm (loaded), unused (compiled "
        "nothing); null where the log ends before it would say",
    )
