"""The context descriptor: everything a measured number depends on, carried next to it.

A figure without its context cannot set a default, ship a config or be compared. Every
result redline emits that holds a metric (a *_ms latency, a throughput, tokens/s) holds a
`context` beside it (tests/rigor/test_no_bare_metrics.py walks every tool's output schema).
Two figures are comparable only when their contexts agree on what `comparable_fields` lists;
the serve config itself may differ: that difference is what an A/B or a diff measures.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import Field

from redline.models.boot import CompileCache
from redline.models.serve import ServeConfig, is_eager
from redline.models.strict import Strict
from redline.models.workloads import most_tokens

Provenance = Literal["measured", "simulated", "predicted"]
Name = Annotated[str, Field(max_length=200)]


class ModelIdentity(Strict):
    """The model as served, and what tells two copies of it apart."""

    name: Annotated[str, Field(max_length=4096, description="the model as the serve command takes it: path or hub id")]
    config_hash: Annotated[
        str | None,
        Field(max_length=80, description="sha256 of its config.json where the folder was readable; else null"),
    ] = None
    quantization: Annotated[
        str | None,
        Field(max_length=64, description="the weights' quantization (config.json or --quantization); null: none seen"),
    ] = None
    dtype: Annotated[str | None, Field(max_length=32, description="torch_dtype from config.json")] = None


class Hardware(Strict):
    """The accelerators a figure was measured on; gpu_name null on a host without a GPU."""

    gpu_name: Name | None = None
    gpu_memory_gib: Annotated[float | None, Field(gt=0, le=1 << 20, allow_inf_nan=False)] = None
    gpu_count: Annotated[int, Field(ge=0, le=1 << 16, description="GPUs the serve config uses (TP x PP x DP)")] = 0


class Parallelism(Strict):
    tp: Annotated[int, Field(ge=1, le=1024)] = 1
    dp: Annotated[int, Field(ge=1, le=1024)] = 1
    pp: Annotated[int, Field(ge=1, le=1024)] = 1


class Workload(Strict):
    """What the bench sent: its exact shape, per figure (never one descriptor smoothed over several points)."""

    name: Name | None = Field(None, description="the workload's name where the run benched several; null: its only one")
    dataset: Name = "random"
    input_len: Annotated[int | None, Field(gt=0, le=1 << 26)] = None
    output_len: Annotated[int | None, Field(gt=0, le=1 << 26)] = None
    concurrency: Annotated[int | None, Field(gt=0, le=1 << 26)] = None
    rate: Annotated[float | None, Field(gt=0, le=1e4, description="open loop: requests/s asked; null: closed")] = None
    burstiness: Annotated[float | None, Field(gt=0, le=100, description="with rate: the gamma shape; null: 1")] = None
    speedup: Annotated[float | None, Field(gt=0, le=1e3, description="a trace at its arrivals, x faster")] = None
    trace: Annotated[str | None, Field(max_length=4400)] = Field(
        None, description="a trace workload's file, its SHA-256 and its window's rows"
    )
    num_prompts: Annotated[int | None, Field(gt=0, le=1 << 26)] = None
    range_ratio: float | None = Field(None, ge=0, lt=1, description="lengths drawn from length x (1 +- it); null: 0")
    prefix_len: int | None = Field(None, ge=0, description="tokens every prompt shared at its start; null: none")

    @property
    def tokens(self) -> int | None:
        """The most tokens one of its requests held at its end; None where its lengths are not known."""
        if self.input_len is None or self.output_len is None:
            return None
        return most_tokens(self.input_len, self.output_len, self.range_ratio or 0.0, self.prefix_len or 0)

    @classmethod
    def of(cls, shape: Any, name: str | None = None) -> Workload:
        """The shape a workload spec or a bench's workload sent (a bench's has its concurrency and prompt count);
        a length spread or a shared prefix is stated only where there is one."""
        bench = hasattr(shape, "concurrency")  # a bench's workload, not a spec's
        rate = getattr(shape, "rate", None) if bench else None
        burstiness = getattr(shape, "burstiness", 1.0)
        lengths = (shape.input_len, shape.output_len) if bench or shape.dataset != "trace" else shape.lengths
        return cls(
            name=name,
            dataset=shape.dataset,
            input_len=lengths[0],
            output_len=lengths[1],
            concurrency=shape.concurrency if bench else None,
            rate=rate,
            burstiness=burstiness if burstiness != 1.0 else None,
            speedup=getattr(shape, "speedup", None) if bench else None,
            trace=None if bench or shape.dataset != "trace" else shape.trace_id,
            num_prompts=shape.num_prompts if bench else None,
            range_ratio=shape.range_ratio or None,
            prefix_len=shape.prefix_len or None,
        )


class RegimeLabel(Strict):
    """How the server was measured: warmed up or cold, eager or CUDA graphs, prefix caching on or off, and the
    torch.compile cache its boot found (what its KV cache depends on: a cold compile's allocations count in vLLM's
    profile). `cache` is the warm-up; `compile_cache` is the boot's, and two figures may differ in it (an A/B's
    first trial compiles, its later ones load): it is recorded, not compared."""

    cache: Literal["warm", "cold"]
    graphs: Literal["eager", "graphs"]
    prefix_caching: bool | None = Field(None, description="null: the engine's default was left in place")
    compile_cache: CompileCache | None = Field(
        None,
        description="the torch.compile cache the boot found, as its log says: cold (compiled), warm (loaded), unused "
        "(compiled nothing); null: not read (a plan's, or a record written before redline read it)",
    )

    @property
    def label(self) -> str:
        return f"{self.cache}/{self.graphs}"


def regime_of(config: ServeConfig, warmup_requests: int, compile_cache: CompileCache | None = None) -> RegimeLabel:
    """The regime a server of config is measured in after `warmup_requests` warm-up requests (0: cold), its boot
    having found the torch.compile cache `compile_cache` (None: not known, as in a plan): the one regime model of a
    plan's cell and of every measured figure's context."""
    return RegimeLabel(
        cache="warm" if warmup_requests > 0 else "cold",
        graphs="eager" if is_eager(config) else "graphs",
        prefix_caching=config.enable_prefix_caching,
        compile_cache=compile_cache,
    )


class EngineIdentity(Strict):
    name: Name
    version: Annotated[str | None, Field(max_length=64)] = None


class BenchIdentity(Strict):
    """The bench client: the engine's own, its backend as the command pins it, and its version."""

    client: Name
    backend: Annotated[str | None, Field(max_length=40)] = None
    version: Annotated[str | None, Field(max_length=64)] = None


class Node(Strict):
    """The machine itself: two figures came from one node only when all three agree."""

    hostname: Annotated[str | None, Field(max_length=255)] = None
    machine_id: Annotated[str | None, Field(max_length=128)] = None
    gpu_uuids: Annotated[list[str], Field(max_length=1 << 12)] = []

    def identity(self) -> tuple[str | None, str | None, tuple[str, ...]]:
        return self.hostname, self.machine_id, tuple(self.gpu_uuids)

    def describe(self) -> str:
        gpus = f", GPUs {', '.join(u[-8:] for u in self.gpu_uuids)}" if self.gpu_uuids else ""
        return f"{self.hostname or '?'} (machine {(self.machine_id or '?')[:12]}{gpus})"


class ContextDescriptor(Strict):
    """Everything one figure (or one set of trials of it) depends on."""

    provenance: Provenance = Field(description="measured on a real run, simulated (a replay), or predicted")
    model: ModelIdentity
    hardware: Hardware
    kv_cache_dtype: Annotated[str, Field(max_length=32, description="auto: the model's dtype")] = "auto"
    parallelism: Parallelism
    serve: ServeConfig
    workload: Workload
    regime: RegimeLabel
    engine: EngineIdentity
    bench: BenchIdentity | None = Field(None, description="null for figures no bench client made")
    trials: Annotated[
        int, Field(ge=0, le=1 << 16, description="trials behind the figure (each a clean boot in an A/B)")
    ] = 1
    warmup_requests: Annotated[
        int | None, Field(ge=0, le=1 << 26, description="warm-up requests the server answered before it was measured")
    ] = None
    node: Node | None = Field(None, description="null where the run did not record its node")
    nodes: Annotated[list[Node], Field(description="every node the trials ran on, where there were several")] = []
    baseline: Annotated[str | None, Field(max_length=200, description="the baseline this figure is set against")] = None

    @property
    def device(self) -> str:
        """What a per-device figure (output_throughput_per_gpu: divided by TP x PP x DP) is per, in words: a GPU
        where the host showed one; where it showed none, the host (one engine process) or a device (each worker)."""
        if self.hardware.gpu_name or self.hardware.gpu_count:
            return "GPU"
        p = self.parallelism
        return "host" if p.tp * p.dp * p.pp == 1 else "device"


def device_of(contexts: Iterable[ContextDescriptor]) -> str:
    """What the per-device figures of these contexts are per (ContextDescriptor.device), said once: `device` where
    they differ or there are none."""
    found = {c.device for c in contexts}
    return found.pop() if len(found) == 1 else "device"


# What must agree for two figures to be compared (the serve config is what an A/B varies).
COMPARABLE: dict[str, Any] = {
    "model": lambda c: c.model.name,
    "model.config_hash": lambda c: c.model.config_hash,
    "hardware.gpu_name": lambda c: c.hardware.gpu_name,
    "hardware.gpu_count": lambda c: c.hardware.gpu_count,
    "engine": lambda c: c.engine.name,
    "engine.version": lambda c: c.engine.version,
    "workload.dataset": lambda c: c.workload.dataset,
    "workload.input_len": lambda c: c.workload.input_len,
    "workload.output_len": lambda c: c.workload.output_len,
    "workload.concurrency": lambda c: c.workload.concurrency,
    "workload.rate": lambda c: c.workload.rate,
    "workload.burstiness": lambda c: c.workload.burstiness or 1.0,
    "workload.speedup": lambda c: c.workload.speedup,
    "workload.trace": lambda c: c.workload.trace,
    "workload.num_prompts": lambda c: c.workload.num_prompts,
    "workload.range_ratio": lambda c: c.workload.range_ratio or 0.0,
    "workload.prefix_len": lambda c: c.workload.prefix_len or 0,
    "regime.cache": lambda c: c.regime.cache,
    "regime.graphs": lambda c: c.regime.graphs,
    "parallelism.tp": lambda c: c.parallelism.tp,
    "parallelism.dp": lambda c: c.parallelism.dp,
    "parallelism.pp": lambda c: c.parallelism.pp,
}
# Unknown on one side is not a difference for these (a hash only exists where the folder was readable).
UNKNOWN_MATCHES = frozenset({"model.config_hash"})


def differing_fields(a: ContextDescriptor, b: ContextDescriptor) -> list[str]:
    """The comparable fields on which a and b disagree, each as `field: a vs b`."""
    out = []
    for name, get in COMPARABLE.items():
        left, right = get(a), get(b)
        if name in UNKNOWN_MATCHES and (left is None or right is None):
            continue
        if left != right:
            out.append(f"{name}: {left!r} vs {right!r}")
    return out


__all__ = [
    "BenchIdentity",
    "COMPARABLE",
    "ContextDescriptor",
    "EngineIdentity",
    "Hardware",
    "ModelIdentity",
    "Node",
    "Parallelism",
    "Provenance",
    "RegimeLabel",
    "Workload",
    "device_of",
    "differing_fields",
    "regime_of",
]
