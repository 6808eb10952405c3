"""Speed-of-light: the decode memory-bound ceiling worked by hand for the H200 fixture shapes (llama8b, qwen32b
under tests/data/vllm-0.26.0-h200/models/), and the packaged table of GPU peaks."""

from __future__ import annotations

import json

import pytest

from redline.models.context import Hardware, ModelIdentity, Workload
from redline.models.shape import kv_bytes_per_token, param_count, shape_of, weight_bytes
from redline.ops.evidence.sol import sol_figure, sol_table
from redline.policy.sol import decode_ceiling, peaks_for
from tests.conftest import H200
from tests.rigor.helpers import context

H200_BW = 4.8e12  # bytes/s: the NVIDIA H200 datasheet's 4.8 TB/s


def shape(name: str):  # noqa: ANN201
    found, why = shape_of(json.loads((H200 / "models" / name / "config.json").read_text()))
    assert found is not None, why
    return found


def test_llama8b_by_hand() -> None:
    s = shape("llama8b")
    embeddings = 2 * 128256 * 4096  # embed_tokens + an untied lm_head
    layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096  # q, k+v, o, gated MLP, norms
    assert layer == 218_112_000
    assert param_count(s) == embeddings + 32 * layer + 4096 == 8_030_261_248  # Llama-3.1-8B: 8.03B
    assert weight_bytes(s) == 2 * 8_030_261_248 == 16_060_522_496  # bf16
    assert kv_bytes_per_token(s) == 2 * 32 * 8 * 128 * 2 == 131_072  # K+V x layers x KV heads x head dim x bf16
    assert kv_bytes_per_token(s, "fp8") == 65_536


def test_llama8b_ceiling_for_the_real_h200_bench() -> None:
    """bench_l8b_c16.json: concurrency 16, 1024 in / 128 out, 1890.39 output tokens/s measured."""
    measured = json.loads((H200 / "bench_l8b_c16.json").read_text())["output_throughput"]
    figure = decode_ceiling(
        sol_table(),
        "NVIDIA H200",
        shape("llama8b"),
        gpus=1,
        dp=1,
        batch=16,
        input_len=1024,
        output_len=128,
        measured_tokens_per_s=measured,
    )
    context_tokens = 1024 + 128 / 2  # 1088: the mean KV length over a request's decode
    step = 16_060_522_496 + 16 * 1088 * 131_072  # 16,060,522,496 + 2,281,701,376 = 18,342,223,872 bytes
    assert step == 18_342_223_872 and figure.bytes_per_step == step and figure.context_tokens == context_tokens
    assert figure.key == "h200-sxm" and figure.batch == 16
    assert figure.ceiling_tokens_per_s == pytest.approx(16 * H200_BW / step) == pytest.approx(4187.07, abs=0.01)
    assert figure.pct_of_ceiling == pytest.approx(45.15, abs=0.01)  # 1890.39 / 4187.07
    assert figure.weights_share == pytest.approx(16_060_522_496 / step)
    assert "NVIDIA H200 Tensor Core GPU datasheet" in figure.basis  # the peak is named, never inlined


def test_qwen32b_by_hand() -> None:
    s = shape("qwen32b")
    embeddings = 2 * 152064 * 5120
    attention = 5120 * 5120 + 2 * 5120 * 1024 + 5120 * 5120 + (5120 + 2 * 1024)  # q, k+v, o, and q/k/v biases
    layer = attention + 3 * 5120 * 27648 + 2 * 5120
    assert layer == 487_605_248
    assert param_count(s) == embeddings + 64 * layer + 5120 == 32_763_876_352  # Qwen2.5-32B: 32.76B
    assert weight_bytes(s) == 65_527_752_704
    assert kv_bytes_per_token(s) == 2 * 64 * 8 * 128 * 2 == 262_144


@pytest.mark.parametrize(
    ("kv_dtype", "kv_per_token", "ceiling"),
    [
        (None, 262_144, 514.37),  # 8 x 4.8e12 / (65,527,752,704 + 8 x 4,352 x 262,144 = 74,654,558,208)
        ("fp8", 131_072, 547.86),  # 8 x 4.8e12 / (65,527,752,704 + 8 x 4,352 x 131,072 = 70,091,155,456)
    ],
)
def test_qwen32b_ceiling_at_concurrency_8(kv_dtype: str | None, kv_per_token: int, ceiling: float) -> None:
    figure = decode_ceiling(
        sol_table(),
        "NVIDIA H200",
        shape("qwen32b"),
        gpus=1,
        dp=1,
        batch=8,
        input_len=4096,
        output_len=512,
        kv_cache_dtype=kv_dtype,
        measured_tokens_per_s=257.0,
    )
    step = 65_527_752_704 + 8 * 4352 * kv_per_token
    assert figure.bytes_per_step == step and figure.kv_bytes_per_token == kv_per_token
    assert figure.ceiling_tokens_per_s == pytest.approx(8 * H200_BW / step) == pytest.approx(ceiling, abs=0.01)
    assert figure.pct_of_ceiling == pytest.approx(100 * 257.0 / (8 * H200_BW / step))


def test_tensor_and_data_parallel_bandwidth_and_weights() -> None:
    s = shape("qwen32b")
    tp2 = decode_ceiling(sol_table(), "NVIDIA H200", s, gpus=2, dp=1, batch=8, input_len=4096, output_len=512)
    dp2 = decode_ceiling(sol_table(), "NVIDIA H200", s, gpus=2, dp=2, batch=8, input_len=4096, output_len=512)
    assert tp2.ceiling_tokens_per_s == pytest.approx(8 * 2 * H200_BW / 74_654_558_208)  # twice the bandwidth
    assert dp2.bytes_per_step == 2 * 65_527_752_704 + 8 * 4352 * 262_144  # each replica reads its own weights


def test_sol_figure_takes_the_batch_from_the_context_capped_by_max_num_seqs() -> None:
    ctx = context(64)  # max_num_seqs 64 in the helper's serve config
    ctx = ctx.model_copy(update={"serve": ctx.serve.model_copy(update={"max_num_seqs": 32})})
    figure = sol_figure(ctx, shape("llama8b"), 3000.0)
    assert figure.batch == 32 and figure.key == "h200-sxm" and figure.pct_of_ceiling is not None


def test_where_there_is_no_ceiling_it_says_why() -> None:
    cpu = context(4, hardware=Hardware())
    assert sol_figure(cpu, shape("llama8b"), 10.0).basis == "no ceiling: no GPU on this host"
    odd = context(4, hardware=Hardware(gpu_name="NVIDIA A10G", gpu_count=1))
    assert "no sol-ceilings.yaml entry matches GPU 'NVIDIA A10G'" in sol_figure(odd, shape("llama8b"), 10.0).basis
    assert "model's shape is unknown" in sol_figure(context(4), None, 10.0, "no config.json").basis
    quant = context(4, model=ModelIdentity(name="m", quantization="hqq"))
    assert "quantization 'hqq'" in sol_figure(quant, shape("llama8b"), 10.0).basis
    moe = shape("llama8b").model_copy(update={"experts": 8, "experts_per_token": 2, "moe_intermediate": 14336})
    assert "mixture-of-experts" in sol_figure(context(4), moe, 10.0).basis
    assert sol_figure(context(4, workload=Workload()), None, 1.0).basis.startswith("no ceiling: the workload")


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA B200", "b200"),
    ],
)
def test_gpu_names_as_nvidia_smi_prints_them(name: str, key: str) -> None:
    found = peaks_for(sol_table(), name)
    assert found is not None and found[0] == key


def test_the_table_names_a_datasheet_for_every_gpu_and_keeps_h100_h200_b200() -> None:
    table = sol_table()
    assert {"h100-sxm", "h200-sxm", "b200"} <= set(table.ceilings)
    for key, peaks in table.ceilings.items():
        assert "datasheet" in peaks.datasheet.lower(), key
        assert peaks.fp8_dense_tflops == pytest.approx(2 * peaks.bf16_dense_tflops, rel=0.01), key
    assert table.ceilings["h200-sxm"].memory_bandwidth_gb_s == 4800
    assert table.ceilings["b200"].memory_bandwidth_gb_s == 8000
