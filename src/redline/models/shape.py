"""A decoder's architecture as the memory model and the speed-of-light arithmetic read it, from its config.json,
and the arithmetic on it: parameters, weight bytes, KV bytes per token, activation bytes per batched token. Pure,
and the lowest layer, so the engines' memory models (engines/*/memory.py) and the speed-of-light ceiling
(policy/sol.py) read a model through the same sums.

Full-attention decoders only, dense or mixture-of-experts (Llama, Qwen2/2.5/3, Qwen3-MoE, Mixtral, Mistral): a model
whose layers keep KV of different sizes (sliding windows, linear attention, MLA's latent KV, state-space layers) is
refused with the field that says so, never sized as if it were one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class ModelShape(BaseModel):
    """The sizes that set a decoder's weight bytes, KV bytes per token and activation per batched token."""

    model_config = ConfigDict(extra="forbid")

    architecture: str | None = None
    layers: Annotated[int, Field(gt=0)]
    hidden: Annotated[int, Field(gt=0)]
    intermediate: Annotated[int, Field(gt=0, description="the dense MLP's width (an MoE model's dense layers)")]
    heads: Annotated[int, Field(gt=0)]
    kv_heads: Annotated[int, Field(gt=0)]
    head_dim: Annotated[int, Field(gt=0)]
    vocab: Annotated[int, Field(gt=0)]
    tied_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = Field(False, description="a norm on each head's q and k (Qwen3)")
    dtype_bytes: Annotated[float, Field(gt=0, description="bytes per weight of the model's torch_dtype")] = 2.0
    experts: Annotated[int, Field(ge=0, description="routed experts per layer; 0: a dense model")] = 0
    experts_per_token: Annotated[int, Field(ge=0)] = 0
    moe_intermediate: Annotated[int, Field(ge=0, description="one routed expert's MLP width")] = 0
    shared_intermediate: Annotated[int, Field(ge=0, description="the shared experts' MLP width, if any")] = 0
    max_positions: Annotated[int | None, Field(gt=0, description="max_position_embeddings")] = None
    rotary_dim: Annotated[int | None, Field(gt=0, description="the rotated dims of a head (rope)")] = None

    @property
    def is_moe(self) -> bool:
        return self.experts > 0


DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "half": 2.0, "float32": 4.0, "float": 4.0}
# Bytes per weight of the linear layers under a quantization (embeddings and the LM head stay at the model's dtype).
QUANT_BYTES = {
    "fp8": 1.0,
    "fbgemm_fp8": 1.0,
    "compressed-tensors": 1.0,
    "awq": 0.5,
    "gptq": 0.5,
    "awq_marlin": 0.5,
    "gptq_marlin": 0.5,
    "bitsandbytes": 0.5,
}
KV_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "bfloat16": 2, "float16": 2, "half": 2, "float32": 4}
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
UNSIZED = {  # a config key whose presence means per-layer KV redline does not size, and why
    "kv_lora_rank": "multi-head latent attention (MLA): its KV is a latent, not K and V per head",
    "full_attention_interval": "hybrid linear attention: only some layers keep KV",
    "ssm_state_size": "state-space layers: their state is not a KV cache",
    "mamba_d_state": "state-space layers: their state is not a KV cache",
}


class ConfigValueError(ValueError):
    """A config.json value of the wrong kind or size: its one line names the field and what it should be."""


# The largest whole number each field may hold: far past any model today (hidden 16,384, vocab 262,144, 128 experts,
# 10M positions), small enough that no sum on a shape overflows a float.
LIMITS = {
    "num_hidden_layers": 1 << 12,
    "hidden_size": 1 << 20,
    "intermediate_size": 1 << 22,
    "num_attention_heads": 1 << 14,
    "num_key_value_heads": 1 << 14,
    "head_dim": 1 << 14,
    "vocab_size": 1 << 24,
    "max_position_embeddings": 1 << 30,
    "moe_intermediate_size": 1 << 22,
    "shared_expert_intermediate_size": 1 << 22,
    "num_experts_per_tok": 1 << 14,
    "moe_topk": 1 << 14,
    **dict.fromkeys(EXPERT_KEYS, 1 << 14),
}


def _phrase(value: object) -> str:
    """A config value as one short phrase: its kind where it is not a scalar, never a huge number spelled out."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return (
            f"a number of {int(value.bit_length() * 0.30103) + 1:,} digits" if value.bit_length() > 64 else str(value)
        )
    if isinstance(value, float | str):
        return repr(value)[:40]
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, Mapping) else type(value).__name__


def whole(c: Mapping[str, Any], key: str, low: int = 1) -> int | None:
    """config.json's `key` as a whole number from `low` to its limit; None where it is absent (or null)."""
    value, high = c.get(key), LIMITS[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigValueError(
            f"config.json: {key} is {_phrase(value)}: it must be a whole number from {low} to {high:,}"
        )
    return value


def _of(c: Mapping[str, Any], key: str, kind: type | tuple[type, ...], words: str) -> Any:
    """config.json's `key` where it is of `kind` (None where absent or null), else the one line that says so."""
    value = c.get(key)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise ConfigValueError(f"config.json: {key} is {_phrase(value)}: it must be {words}")
    return value


def _fraction(c: Mapping[str, Any], key: str) -> float:
    value = _of(c, key, (int, float), "a number over 0, at most 1")
    if value is not None and not 0 < value <= 1:  # NaN and Infinity fail this too
        raise ConfigValueError(f"config.json: {key} is {_phrase(value)}: it must be a number over 0, at most 1")
    return 1.0 if value is None else float(value)


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config (multimodal configs nest it under text_config)."""
    inner = _of(config, "text_config", Mapping, "an object (the language model's config)")
    return config if inner is None else inner


def max_positions(config: Mapping[str, Any]) -> int | None:
    """max_position_embeddings, the language model's where a multimodal config nests it; None where absent."""
    return whole(config, "max_position_embeddings") or whole(text_config(config), "max_position_embeddings")


def _unsized(c: Mapping[str, Any]) -> str | None:
    for key, why in UNSIZED.items():
        if c.get(key):
            return f"{why} ({key} in config.json)"
    kinds = c.get("layer_types")
    if isinstance(kinds, list) and any(k != "full_attention" for k in kinds):
        named = sorted({_phrase(k) if not isinstance(k, str) else k[:40] for k in kinds[:4096]})[:8]
        return f"layers of kinds {named}: only some keep full-length KV (layer_types)"
    if c.get("use_sliding_window") is True:
        return "sliding-window attention (use_sliding_window): its layers keep a window of KV, not the whole context"
    return None


def _experts(c: Mapping[str, Any]) -> dict[str, int]:
    """An MoE config's routed experts, their width and the shared experts' width (Mixtral's experts are its
    intermediate_size; Qwen's are moe_intermediate_size)."""
    experts = next((n for k in EXPERT_KEYS if (n := whole(c, k, 0))), 0)
    if not experts:
        return {}
    per_token = whole(c, "num_experts_per_tok") or whole(c, "moe_topk") or 1
    if per_token > experts:
        raise ConfigValueError(
            f"config.json: num_experts_per_tok is {per_token}: it must be at most the {experts} experts"
        )
    return {
        "experts": experts,
        "experts_per_token": per_token,
        "moe_intermediate": whole(c, "moe_intermediate_size") or c["intermediate_size"],
        "shared_intermediate": whole(c, "shared_expert_intermediate_size", 0) or 0,
    }


def _architecture(config: Mapping[str, Any]) -> str | None:
    names = _of(config, "architectures", list, "a list of class names")
    if names and not isinstance(names[0], str):
        raise ConfigValueError(
            f"config.json: architectures holds {_phrase(names[0])}: it must be a list of class names"
        )
    return names[0][:200] if names else None


def shape_of(config: Mapping[str, Any]) -> tuple[ModelShape | None, str]:
    """The decoder a config.json describes, or None and why redline cannot size it. ConfigValueError (one line
    naming the field and what it should be) for a value of the wrong kind or size."""
    c = text_config(config)
    if why := _unsized(c):
        return None, why
    need = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")
    sizes = {k: whole(c, k) for k in need}
    missing = [k for k, v in sizes.items() if v is None]
    if missing:
        return None, f"config.json lacks {', '.join(missing)}"
    named = (
        _of(where, key, str, "a dtype's name")
        for where, key in ((c, "torch_dtype"), (c, "dtype"), (config, "torch_dtype"))
    )
    dtype = next((d for d in named if d), "bfloat16")
    if dtype not in DTYPE_BYTES:
        return None, f"torch_dtype {dtype[:40]!r} is not one redline sizes ({', '.join(DTYPE_BYTES)})"
    return _shape(config, c, sizes, DTYPE_BYTES[dtype])


def _shape(
    config: Mapping[str, Any], c: Mapping[str, Any], sizes: dict[str, Any], dtype: float
) -> tuple[ModelShape, str]:
    """The shape of `sizes`, already checked, and the rest of the text config `c`, checked here."""
    hidden, heads = sizes["hidden_size"], sizes["num_attention_heads"]
    head_dim = whole(c, "head_dim") or hidden // heads
    if head_dim < 1:
        raise ConfigValueError(
            f"config.json: hidden_size {hidden} is under num_attention_heads {heads}: write head_dim"
        )
    model_type = _of(c, "model_type", str, "a model type's name") or ""
    tied = _of(c, "tie_word_embeddings", bool, "true or false")
    bias = _of(c, "attention_bias", bool, "true or false")
    shape = ModelShape(
        architecture=_architecture(config),
        layers=sizes["num_hidden_layers"],
        hidden=hidden,
        intermediate=sizes["intermediate_size"],
        heads=heads,
        kv_heads=whole(c, "num_key_value_heads") or heads,
        head_dim=head_dim,
        vocab=sizes["vocab_size"],
        tied_embeddings=bool(_of(config, "tie_word_embeddings", bool, "true or false") if tied is None else tied),
        attention_bias=model_type in ("qwen2", "qwen2_moe") if bias is None else bias,
        qk_norm=model_type.startswith("qwen3"),
        dtype_bytes=dtype,
        max_positions=whole(c, "max_position_embeddings"),
        rotary_dim=max(1, int(head_dim * _fraction(c, "partial_rotary_factor"))),
        **_experts(c),
    )
    return shape, "mixture-of-experts decoder" if shape.is_moe else "dense decoder"


def _mlp_params(s: ModelShape) -> int:
    """One layer's MLP: gated (gate, up, down); an MoE layer's routed experts, router and shared experts."""
    if not s.is_moe:
        return 3 * s.hidden * s.intermediate
    routed = s.experts * 3 * s.hidden * s.moe_intermediate + s.hidden * s.experts
    shared = 3 * s.hidden * s.shared_intermediate + s.hidden if s.shared_intermediate else 0
    return routed + shared


def layer_params(s: ModelShape) -> int:
    """One decoder layer: q, k, v, o projections (with their biases, q/k norms), the MLP, two norms."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    attention = s.hidden * q + 2 * s.hidden * kv + q * s.hidden
    bias = q + 2 * kv if s.attention_bias else 0
    norms = 2 * s.hidden + (2 * s.head_dim if s.qk_norm else 0)
    return attention + bias + _mlp_params(s) + norms


def embedding_params(s: ModelShape) -> int:
    """The token embedding and, unless tied, the LM head."""
    return s.vocab * s.hidden * (1 if s.tied_embeddings else 2)


def param_count(s: ModelShape) -> int:
    return embedding_params(s) + s.layers * layer_params(s) + s.hidden  # + the final norm


def weight_bytes(s: ModelShape, quantization: str | None = None) -> int | None:
    """Bytes of the weights of one replica; None for a quantization redline does not size."""
    if quantization is None:
        return int(param_count(s) * s.dtype_bytes)
    per = QUANT_BYTES.get(quantization)
    if per is None:
        return None
    linear = s.layers * layer_params(s)
    return int(linear * per + (embedding_params(s) + s.hidden) * s.dtype_bytes)


def active_weight_bytes(s: ModelShape, quantization: str | None = None) -> int | None:
    """Bytes one token's decode reads: every weight of a dense model; of an MoE model, the experts it is routed to."""
    total = weight_bytes(s, quantization)
    if total is None or not s.is_moe:
        return total
    idle = s.layers * (s.experts - s.experts_per_token) * 3 * s.hidden * s.moe_intermediate
    per = s.dtype_bytes if quantization is None else QUANT_BYTES[quantization]
    return int(total - idle * per)


def rope_cache_bytes(s: ModelShape) -> int:
    """The rotary embedding's cos/sin table: every position x the rotated dims, at the model's dtype."""
    if s.max_positions is None or s.rotary_dim is None:
        return 0
    return int(s.max_positions * s.rotary_dim * s.dtype_bytes)


def kv_bytes_per_token(s: ModelShape, kv_cache_dtype: str | None = None) -> int | None:
    """K and V of every layer for one token; auto is the model's own dtype."""
    per = s.dtype_bytes if kv_cache_dtype in (None, "auto") else KV_BYTES.get(kv_cache_dtype)
    if per is None:
        return None
    return int(2 * s.layers * s.kv_heads * s.head_dim * per)


def mlp_activation_bytes(s: ModelShape) -> float:
    """What one batched token holds at the MLP's peak: its input and residual (2 x hidden) and the gated MLP's
    gate, up and activated outputs (3 x width); in an MoE layer, those of each expert it is routed to."""
    if not s.is_moe:
        width = 3 * s.intermediate
    else:
        width = s.experts_per_token * (3 * s.moe_intermediate + s.hidden) + 3 * s.shared_intermediate
    return float((2 * s.hidden + width) * s.dtype_bytes)


__all__ = [
    "DTYPE_BYTES",
    "ConfigValueError",
    "KV_BYTES",
    "QUANT_BYTES",
    "ModelShape",
    "active_weight_bytes",
    "embedding_params",
    "kv_bytes_per_token",
    "max_positions",
    "layer_params",
    "mlp_activation_bytes",
    "param_count",
    "rope_cache_bytes",
    "shape_of",
    "text_config",
    "weight_bytes",
]
