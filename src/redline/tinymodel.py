"""A tiny Llama-shaped model folder that vLLM can serve with ``--load-format dummy`` (or load for real).

redline tests real ``vllm serve`` boots on machines without a GPU (vLLM's CPU
build). That needs a model folder, but no weights: with ``--load-format dummy``
vLLM fills the weights with random values, so only the config and a tokenizer
have to exist. :func:`write_tiny_llama` writes exactly that:

- ``config.json``: ``LlamaForCausalLM``, hidden 256, intermediate 512, 4 layers,
  4 attention heads, 2 KV heads (head_dim 64), vocab 32000, bfloat16, and the
  ``max_position_embeddings`` you ask for (raise it to probe long contexts
  without ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``);
- ``generation_config.json``;
- ``tokenizer.json``: a byte-level BPE (2,048 entries) shipped as package data
  in ``redline/data/tiny-llama/``; any token id the model emits beyond it simply
  decodes to nothing, which is fine for dummy weights;
- ``tokenizer_config.json`` for ``PreTrainedTokenizerFast``;
- with ``weights=True`` (``--weights``), ``model.safetensors`` too: every tensor
  of the shape, bf16, filled from one fixed seed, for a real load to read (a
  test of how loads are measured); ``num_hidden_layers`` (``--layers``) sizes
  it: 32.8 MB plus 1.18 MB a layer (18 layers: 54.0 MB, 0.05 GiB);
  ``seed`` draws another checkpoint of the same shape (other answers), and
  ``kv_blind=True`` zeroes every attention output projection, so no answer can
  depend on the KV cache: an fp8 KV cache must answer as bf16 does, token for
  token (the accuracy gate's known pass, tests/server/test_real_vllm_accuracy_gate.py).

Output is deterministic (same bytes on every call) and needs nothing beyond the
standard library: neither ``tokenizers`` nor ``transformers`` is imported,
except by the opt-in ``--train-tokenizer`` maintenance command that rebuilt the
shipped tokenizer.json (run it with a Python that has ``tokenizers``, e.g. the
vLLM venv)::

    .venv-vllm/bin/python -m redline.tinymodel --train-tokenizer \
        src/redline/data/tiny-llama/tokenizer.json

Usage::

    python -m redline.tinymodel DEST [--max-position-embeddings N] [--layers N] [--weights [--seed N] [--kv-blind]]
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["TINY_LLAMA_SHAPE", "write_tiny_llama"]

#: The architecture written to config.json (without max_position_embeddings).
TINY_LLAMA_SHAPE: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 32000,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "pretraining_tp": 1,
    "tie_word_embeddings": False,
    "use_cache": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
    # "dtype" for transformers >= 4.56, "torch_dtype" for older ones.
    "dtype": "bfloat16",
    "torch_dtype": "bfloat16",
}

# Special tokens; their ids are fixed by the shipped tokenizer.json.
UNK, BOS, EOS = "<unk>", "<s>", "</s>"
_SPECIAL_TOKENS = (UNK, BOS, EOS)
_TOKENIZER_VOCAB_SIZE = 2048
SEED = 20261130  # the weights' default draw
_DATA = ("data", "tiny-llama", "tokenizer.json")


def _dump(obj: Any) -> bytes:
    """Stable JSON bytes: sorted keys, fixed indent, trailing newline."""
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _config(max_position_embeddings: int, layers: int) -> dict[str, Any]:
    return {**TINY_LLAMA_SHAPE, "max_position_embeddings": max_position_embeddings, "num_hidden_layers": layers}


def _generation_config() -> dict[str, Any]:
    return {
        "_from_model_config": True,
        "bos_token_id": TINY_LLAMA_SHAPE["bos_token_id"],
        "eos_token_id": TINY_LLAMA_SHAPE["eos_token_id"],
    }


def _tokenizer_config(max_position_embeddings: int) -> dict[str, Any]:
    added = {
        str(i): {
            "content": tok,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, tok in enumerate(_SPECIAL_TOKENS)
    }
    return {
        "added_tokens_decoder": added,
        "bos_token": BOS,
        "eos_token": EOS,
        "unk_token": UNK,
        "pad_token": None,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_position_embeddings,
        "tokenizer_class": "PreTrainedTokenizerFast",
        # Minimal template so /v1/chat/completions works too.
        "chat_template": (
            "{% for message in messages %}"
            "{{ message['role'] }}: {{ message['content'] }}\n"
            "{% endfor %}"
            "{% if add_generation_prompt %}assistant: {% endif %}"
        ),
    }


def _tokenizer_json() -> bytes:
    return resources.files("redline").joinpath(*_DATA).read_bytes()


def _tensors(layers: int) -> list[tuple[str, tuple[int, ...]]]:
    """Every tensor of LlamaForCausalLM at the tiny shape, by its Hugging Face name, in file order."""
    c = TINY_LLAMA_SHAPE
    hidden, inter, vocab = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    q, kv = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
    out: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (hidden,)), (p + "post_attention_layernorm.weight", (hidden,))]
        out += [(p + f"self_attn.{n}_proj.weight", (rows, hidden)) for n, rows in (("q", q), ("k", kv), ("v", kv))]
        out += [(p + "self_attn.o_proj.weight", (hidden, q)), (p + "mlp.down_proj.weight", (hidden, inter))]
        out += [(p + f"mlp.{n}_proj.weight", (inter, hidden)) for n in ("gate", "up")]
    return out + [("model.norm.weight", (hidden,)), ("lm_head.weight", (vocab, hidden))]


def _write_weights(path: Path, layers: int, seed: int, kv_blind: bool) -> None:
    """model.safetensors: bf16, norms 1.0, every matrix a fixed pattern of small values (uniform in +-0.02) drawn
    from `seed`; with `kv_blind`, every attention output projection zero."""
    rng = random.Random(seed)
    block = b"".join(struct.pack("<f", rng.uniform(-0.02, 0.02))[2:] for _ in range(1 << 15))  # bf16: the top half
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset, tensors = 0, _tensors(layers)
    for name, shape in tensors:
        size = 2 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in tensors:
            size = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
            if len(shape) == 1:
                f.write(struct.pack("<f", 1.0)[2:] * (size // 2))
            elif kv_blind and name.endswith("o_proj.weight"):
                f.write(bytes(size))
            else:
                f.write(block * (size // len(block)) + block[: size % len(block)])


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int")
    if value < 1:
        raise ValueError(f"{name} must be >= 1")
    return value


def write_tiny_llama(
    dest: Path,
    *,
    max_position_embeddings: int = 4096,
    num_hidden_layers: int = 4,
    weights: bool = False,
    seed: int = SEED,
    kv_blind: bool = False,
) -> Path:
    """Write a tiny Llama model folder (config + tokenizer; weights only with ``weights=True``, drawn from ``seed``,
    their attention outputs zero with ``kv_blind``) to ``dest``.

    Creates ``dest`` (and parents) if needed and overwrites the files it
    writes; other files in ``dest`` are left alone. Returns ``dest``.
    """
    _positive_int("max_position_embeddings", max_position_embeddings)
    _positive_int("num_hidden_layers", num_hidden_layers)
    if kv_blind and not weights:
        raise ValueError("kv_blind zeroes written weights: write them too (weights=True)")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    files = {
        "config.json": _dump(_config(max_position_embeddings, num_hidden_layers)),
        "generation_config.json": _dump(_generation_config()),
        "tokenizer.json": _tokenizer_json(),
        "tokenizer_config.json": _dump(_tokenizer_config(max_position_embeddings)),
    }
    for name, data in files.items():
        (dest / name).write_bytes(data)
    if weights:
        _write_weights(dest / "model.safetensors", num_hidden_layers, seed, kv_blind)
    return dest


# --- maintenance: rebuilding the shipped tokenizer.json -----------------------

_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when "
    "if so no will more can out up who said what about into than them only other new some "
    "could time these two may then first any like now my over such our man me even most "
    "made after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still "
    "own see men work long get here between both life being under never day same another "
    "know while last might us great old year off come since against go came right used take "
    "three model token cache memory server engine request length context batch prompt "
    "kernel tensor layer attention vector matrix compute boot health port process signal"
).split()
_CODE = (
    "def class return import from if else elif for while try except with as lambda yield "
    "None True False self print len range dict list str int float json path config"
).split()


def training_corpus(seed: int = 20261130, lines: int = 40000) -> list[str]:
    """Deterministic synthetic text (prose, numbers, code-ish lines) for BPE training."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(lines):
        kind = i % 5
        if kind == 4:
            words = [rng.choice(_CODE) for _ in range(rng.randint(3, 10))]
            line = "    " * rng.randint(0, 2) + " ".join(words) + rng.choice([":", "()", " = 0", "[i]"])
        else:
            words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 18))]
            if rng.random() < 0.3:
                words.insert(rng.randrange(len(words)), str(rng.randint(0, 99999)))
            words[0] = words[0].capitalize()
            line = " ".join(words) + rng.choice([".", ".", ".", "?", "!", ",", ";"])
        out.append(line)
    return out


def train_tokenizer(out: Path) -> None:  # pragma: no cover - needs `tokenizers`
    """Train the byte-level BPE shipped as package data (needs ``tokenizers``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_TOKENIZER_VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_corpus(), trainer=trainer)
    bos_id = tok.token_to_id(BOS)
    # Llama-style: prepend <s> to every encoded sequence.
    tok.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single=f"{BOS}:0 $A:0",
                pair=f"{BOS}:0 $A:0 {BOS}:1 $B:1",
                special_tokens=[(BOS, bos_id)],
            ),
        ]
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(tok.to_str(pretty=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m redline.tinymodel",
        description="Write a tiny Llama model folder (config + tokenizer) for an engine to serve with dummy weights.",
    )
    p.add_argument("dest", type=Path, help="folder to write (created if missing)")
    p.add_argument("--max-position-embeddings", type=int, default=4096)
    p.add_argument("--layers", type=int, default=4, help="num_hidden_layers (default 4)")
    p.add_argument("--weights", action="store_true", help="also write model.safetensors, for a real load")
    p.add_argument("--seed", type=int, default=SEED, help="the weights' draw: another seed, another checkpoint")
    p.add_argument(
        "--kv-blind", action="store_true", help="zero every attention output: no answer can read the KV cache"
    )
    p.add_argument(
        "--train-tokenizer",
        action="store_true",
        help="maintenance: instead, train the shipped tokenizer.json into DEST (needs `tokenizers`)",
    )
    args = p.parse_args(argv)
    if args.train_tokenizer:
        train_tokenizer(args.dest)
        print(args.dest)
        return 0
    if args.max_position_embeddings < 1 or args.layers < 1:
        p.error("--max-position-embeddings and --layers must be >= 1")
    if args.kv_blind and not args.weights:
        p.error("--kv-blind zeroes written weights: add --weights")
    dest = write_tiny_llama(
        args.dest,
        max_position_embeddings=args.max_position_embeddings,
        num_hidden_layers=args.layers,
        weights=args.weights,
        seed=args.seed,
        kv_blind=args.kv_blind,
    )
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
