"""Which model runner vLLM 0.26 picks for a model, and what the V1 runner's profile run holds beyond a V2 one's: the
part of a boot's activation peak the memory model (memory.py) adds for it."""

from __future__ import annotations

from redline.models.memory import GIB
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape

DEFAULT_MNBT = 8192  # vLLM's max_num_batched_tokens for `vllm serve` on a GPU when none is given
DEFAULT_SEQS = 1024  # ... and max_num_seqs on a large GPU
# vLLM 0.26 runs its V2 model runner for every dense model and the MoE architectures it lists (config/vllm.py,
# DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES; a V2 boot logs "Using V2 Model Runner"); any other MoE model runs the V1
# runner, whose profile run also samples min(max_num_seqs, batched tokens) dummy requests over the whole vocabulary
# with its native top-k/top-p: a sort of the fp32 logits, values and int64 indices, 12 bytes a logit. On the H200
# that is Qwen3-30B-A3B's 1.6-2.0 GiB above the line Qwen1.5-MoE-A2.7B (V2) sits on.
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


def v1_sampler_gib(shape: ModelShape, serve: ServeConfig) -> float:
    """What the V1 runner's profile run holds beyond a V2 one: its dummy sampling's sort of the logits."""
    if model_runner(shape, serve) != "v1":
        return 0.0
    requests = min(serve.max_num_seqs or DEFAULT_SEQS, mnbt_of(serve))
    return requests * shape.vocab * V1_SAMPLER_BYTES / GIB


__all__ = [
    "DEFAULT_MNBT",
    "DEFAULT_SEQS",
    "V1_SAMPLER_BYTES",
    "V2_MOE_ARCHITECTURES",
    "mnbt_of",
    "model_runner",
    "v1_sampler_gib",
]
