"""Which model runner vLLM 0.26 picks for a model, and what the V1 runner's profile run holds beyond a V2 one's: the
part of a boot's activation peak the memory model (memory.py) adds for it."""

from __future__ import annotations

from redline.models.memory import GIB
from redline.models.serve import ServeConfig, is_eager
from redline.models.shape import ModelShape

DEFAULT_MNBT = 8192  # vLLM's max_num_batched_tokens for `vllm serve` on a GPU when none is given
DEFAULT_SEQS = 1024  # ... and max_num_seqs on a large GPU
# vLLM 0.26 runs its V2 model runner for every dense model and the MoE architectures it lists (config/vllm.py,
# DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES; a V2 boot logs "Using V2 Model Runner"); any other MoE model runs the V1
# runner, whose profile run also samples min(max_num_seqs, batched tokens) dummy requests over the whole vocabulary
# with its native top-k/top-p: a sort of the fp32 logits, values and int64 indices, 12 bytes a logit (the prior;
# calibration.py measures it between boots that differ in their requests alone). On the H200 that is Qwen3-30B-A3B's
# 1.6-2.0 GiB above the line Qwen1.5-MoE-A2.7B (V2) sits on.
V2_MOE_ARCHITECTURES = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "GraniteMoeForCausalLM",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "LongcatFlashNgramForCausalLM",
        "Qwen2MoeForCausalLM",
    }
)
V1_SAMPLER_BYTES = 12


def mnbt_of(serve: ServeConfig) -> int:
    return serve.max_num_batched_tokens or DEFAULT_MNBT


def model_runner(shape: ModelShape, serve: ServeConfig) -> str:
    """The model runner vLLM 0.26 picks: VLLM_USE_V2_MODEL_RUNNER where the config sets it, else v2 for a dense model
    or a listed MoE architecture, v1 for any other MoE model."""
    forced = serve.env.get("VLLM_USE_V2_MODEL_RUNNER")
    if forced is not None:
        return "v2" if forced.strip().lower() in ("1", "true") else "v1"
    return "v2" if not shape.is_moe or shape.architecture in V2_MOE_ARCHITECTURES else "v1"


def _requests(serve: ServeConfig) -> int:
    """The dummy requests the profile run samples: min(max_num_seqs, batched tokens) (each runner's _dummy_run)."""
    return min(serve.max_num_seqs or DEFAULT_SEQS, mnbt_of(serve))


def v2_sampler_gib(shape: ModelShape, serve: ServeConfig) -> float:
    """What the V2 runner's profile run holds while it samples, after the forward pass has freed its own: the
    batch's hidden states, the sampled rows' and their logits at the model's dtype (gpu/model_runner.py
    _dummy_sampler_run: compute_logits, then a Gumbel sampler that works in place, no sort). The profile's peak is
    the larger of this and the forward's: a small model with a large vocabulary at few batched tokens peaks here."""
    if model_runner(shape, serve) != "v2":
        return 0.0
    held = mnbt_of(serve) * shape.hidden + _requests(serve) * (shape.hidden + shape.vocab)
    return held * shape.dtype_bytes / serve.tensor_parallel_size / GIB


def graphs_in_budget(shape: ModelShape, serve: ServeConfig) -> bool:
    """Whether vLLM takes its CUDA graphs' estimated memory from the KV budget before sizing it: the V1 runner
    estimates it (profile_cudagraph_memory) and gpu_worker.py subtracts it while VLLM_MEMORY_PROFILER_ESTIMATE_
    CUDAGRAPHS is on (0.26.0's default); the V2 runner's estimate is 0: it captures after the cache is sized."""
    on = serve.env.get("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1").strip() != "0"
    return not is_eager(serve) and on and model_runner(shape, serve) == "v1"


def v1_logits(shape: ModelShape, serve: ServeConfig) -> int:
    """The logits the V1 runner's profile run samples (0 on the V2 runner): requests x vocabulary."""
    return _requests(serve) * shape.vocab if model_runner(shape, serve) == "v1" else 0


def v1_sampler_gib(shape: ModelShape, serve: ServeConfig, bytes_per_logit: float = V1_SAMPLER_BYTES) -> float:
    """What the V1 runner's profile run holds beyond a V2 one: its dummy sampling of the logits."""
    return v1_logits(shape, serve) * bytes_per_logit / GIB


__all__ = [
    "DEFAULT_MNBT",
    "DEFAULT_SEQS",
    "V1_SAMPLER_BYTES",
    "V2_MOE_ARCHITECTURES",
    "graphs_in_budget",
    "mnbt_of",
    "model_runner",
    "v1_logits",
    "v1_sampler_gib",
    "v2_sampler_gib",
]
