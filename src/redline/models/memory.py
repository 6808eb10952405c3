"""The memory model's shapes: a GPU as the model sees it, a recorded boot it learns from, its fitted terms, and a
prediction, always labelled predicted, with its band and what it was calibrated on."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field

from redline.models.boot import BootSignals, CompileCache
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.models.strict import Strict

GIB = 1 << 30


class GpuSpec(Strict):
    """One GPU as nvidia-smi names it (its total memory in GiB: memory.total MiB / 1024)."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    memory_gib: Annotated[float, Field(gt=0, le=100_000)]
    reserved_gib: Annotated[
        float | None,
        Field(ge=0, le=100_000, description="what the driver keeps of the total: nvidia-smi's memory.reserved / 1024"),
    ] = None


def gpu_spec(name: str | None, memory_gib: float | None, reserved_gib: float | None = None) -> GpuSpec | None:
    """A GPU as every prediction takes it: nvidia-smi's name and its total in GiB to a tenth (as a ladder or a
    verdict records it), so the same GPU is the same input wherever it was read; None where either is unknown."""
    if not name or not memory_gib:
        return None
    return GpuSpec(name=name, memory_gib=round(memory_gib, 1), reserved_gib=reserved_gib)


class Observation(Strict):
    """A recorded boot the model learns from: the model's shape, the config it booted, the GPU, what its log said."""

    source: str = Field(description="where the boot is recorded: a shipped corpus file or a workspace file")
    architecture: str = Field(description="the model it booted, as a key (its folder name or config hash)")
    shape: ModelShape
    serve: ServeConfig
    engine: str
    engine_version: str | None
    gpu: GpuSpec | None = Field(None, description="null: a CPU host (the KV cache is sized by a byte count)")
    signals: BootSignals


class Fit(Strict):
    """One term's fitted coefficients, and how far the boots it was fitted on stray from it (GiB)."""

    coefficients: dict[str, float]
    band_gib: Annotated[float, Field(ge=0)]
    boots: Annotated[int, Field(ge=0)]
    basis: str


class Calibration(Strict):
    """An engine's memory terms fitted on recorded boots of one engine version (and GPU, where one is named)."""

    engine: str
    engine_version: str | None
    gpu_name: str | None
    terms: dict[str, Fit]
    boots: int
    architectures: list[str]
    shapes: list[ModelShape] = Field([], description="the models the boots booted: a prediction for another carries")
    lines: dict[str, list[ModelShape]] = Field(
        {}, description="the models whose boots placed each activation line (a model off its line carries too)"
    )
    sources: list[str] = Field(description="the corpus files and workspace folders the boots came from")
    left_out: list[str] = Field([], description="architectures held out of this fit (a leave-one-out check)")


class Terms(Strict):
    """Where a boot's device memory goes, in GiB (per GPU)."""

    device_total_gib: float | None = Field(None, description="the memory the engine sees on the device")
    budget_gib: float | None = Field(None, description="the share the engine may use (utilisation x total)")
    weights_gib: float | None = None
    activation_gib: float | None = Field(None, description="the profile run's peak, set by max_num_batched_tokens")
    non_torch_gib: float | None = None
    cuda_graph_gib: float | None = Field(None, description="captured after the KV cache is sized; 0 when eager")
    cuda_graph_budget_gib: float | None = Field(
        None, description="what the engine estimates its graphs take and subtracts from the KV budget before sizing it"
    )
    available_kv_cache_gib: float


class MemoryPrediction(Strict):
    """What a boot of a serve config would report, predicted before it runs: never a measured figure."""

    provenance: Literal["predicted"] = "predicted"
    engine: str
    engine_version: str | None
    gpu: GpuSpec | None
    model: str
    architecture: str | None
    serve: ServeConfig
    compile_cache: CompileCache | None = Field(
        None,
        description="the torch.compile cache the boot is predicted for: cold (a fresh deployment's), warm (loaded), "
        "unused (eager); null where the engine's KV cache does not depend on it",
    )
    terms: Terms
    kv_bytes_per_token: int
    kv_cache_tokens: int = Field(description="block-rounded, as the engine's log would print it")
    kv_cache_tokens_low: int = Field(description="the band's low end")
    kv_cache_tokens_high: int = Field(description="the band's high end")
    reserved_tokens: int = Field(
        0, description="tokens of the cache no request may use: a block the engine keeps back (a CPU build's)"
    )
    band_gib: float = Field(description="± GiB of KV cache: the calibration's spread, widened off its data")
    max_concurrency: float = Field(
        description="requests of max_model_len the KV cache holds, as the engine's log would print it (its whole count)"
    )
    boots: bool = Field(description="whether one request of max_model_len fits: the engine refuses the boot if not")
    basis: str = Field(description="how each term was reached, and what the model was calibrated on")
    anchored_on: str | None = Field(None, description="a recorded boot of this model the terms were taken from")
    warnings: list[str] = []


class PredictedKv(Strict):
    """A KV cache as the memory model predicted it before a boot: the one answer (memory_predict's) that a ladder's
    rung, a campaign's cell and an A/B's arm each keep, and a boot's drift is judged against. The counts are whole,
    as the engine's log prints them; `reserved_tokens` of them no request may use."""

    provenance: Literal["predicted"] = "predicted"
    kv_cache_tokens: int = Field(description="block-rounded, as the engine's log would print it")
    kv_cache_tokens_low: int = Field(description="the band's low end (whole, as the log would print it)")
    kv_cache_tokens_high: int = Field(description="the band's high end (whole)")
    reserved_tokens: int = Field(0, description="tokens of the cache no request may use (a block the engine keeps)")
    band_gib: float | None = Field(None, description="± GiB of KV cache")
    max_concurrency: float | None = Field(None, description="requests of max_model_len it holds, as the log says it")
    compile_cache: CompileCache | None = Field(
        None,
        description="the torch.compile cache it is predicted for (null: not said, or the engine's KV cache is "
        "the same either way)",
    )
    basis: str = ""

    @classmethod
    def of(cls, p: MemoryPrediction, **more: object) -> Self:
        """The prediction's KV figures, unchanged."""
        keep = PredictedKv.model_fields.keys() - {"provenance"}
        return cls.model_validate({**{k: getattr(p, k) for k in keep}, **more})


class CorpusBoot(Strict):
    """One boot of a shipped corpus: its log, the model (a folder of the corpus root's models/) and its config."""

    log: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+\.log$")]
    model: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
    serve: dict[str, object] = Field(description="the serve config it booted, less the model")


class Corpus(Strict):
    """A folder of real boot logs of one engine version on one GPU (or a CPU host), and what each booted."""

    engine: str
    engine_version: str
    gpu: GpuSpec | None
    boots: Annotated[list[CorpusBoot], Field(min_length=1)]


__all__ = [
    "GIB",
    "Calibration",
    "Corpus",
    "CorpusBoot",
    "Fit",
    "GpuSpec",
    "MemoryPrediction",
    "Observation",
    "PredictedKv",
    "Terms",
    "gpu_spec",
]
