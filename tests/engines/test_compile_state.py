"""The memory model takes the torch.compile cache as an input (issue 42, item 4): vLLM counts what a cold compile held
in the profile that sizes its KV cache, so a graph-mode boot's activation is measured per compile state (cold, warm,
eager), a cold compile's own spike sets the peak where the forward pass holds less, and every prediction says which
state it is for. Against the real boots redline ships (src/redline/data/boots); pure: no process starts.

The corpus's pairs of one model at one batched-tokens size in both states are llama8b's on the H200 at 8,192
(cold: max_num_seqs 128 and 256; warm: 512) and 16,384 (cold: 128; warm: 256 and 512): max_num_seqs moves neither
its KV cache nor its peak there (the V2 runner, forward-bound), so they stand for one config booted twice until the
lead's same-config pairs land."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.models.memory import MemoryPrediction, Observation
from redline.models.serve import is_eager
from redline.ops.predict.corpus import shipped

VLLM = get_engine("vllm").memory_model()
GRAPHS = [o for o in shipped("vllm") if o.gpu is not None and not is_eager(o.serve)]
H200 = {Path(o.source).name: o for o in shipped("vllm") if o.gpu is not None and o.gpu.name == "NVIDIA H200"}
COLD_8192, WARM_8192 = H200["l8b_campaign_mnbt8192-seqs256.log"], H200["l8b_campaign_mnbt8192-seqs512.log"]


def predict(
    o: Observation, training: list[Observation], *, state: str | None, anchor: Observation | None = None
) -> MemoryPrediction:
    cal = VLLM.calibrate(training, gpu=o.gpu)
    return VLLM.predict(
        o.shape, o.serve, o.gpu, cal, model="m", architecture=None, version=None, anchor=anchor, compile_cache=state
    )


def off(o: Observation, p: MemoryPrediction) -> float:
    real = o.signals.kv_cache_tokens
    assert real is not None
    return abs(p.kv_cache_tokens - real) / real


@pytest.mark.parametrize("boot", GRAPHS, ids=lambda o: o.source)
def test_every_graph_mode_boot_cold_or_warm_within_1pct_with_its_architecture_left_out(boot: Observation) -> None:
    state = boot.signals.compile_cache
    assert state in ("cold", "warm")
    found = predict(boot, [o for o in shipped("vllm") if o.shape != boot.shape], state=state)
    assert found.compile_cache == state and off(boot, found) < 0.01, (found.kv_cache_tokens, found.basis)
    assert found.kv_cache_tokens_low <= (boot.signals.kv_cache_tokens or 0) <= found.kv_cache_tokens_high


def test_a_warm_anchor_asked_cold_moves_by_the_two_states_difference() -> None:
    """The issue's failure: a plan anchored on a warm boot took its smaller peak for the deployment's. Asked cold,
    the warm boot's 0.88 GiB moves to what the cold boots of that size held, and lands on the cold boot's cache."""
    training = [o for o in shipped("vllm") if o.source != COLD_8192.source]
    found = predict(COLD_8192, training, state="cold", anchor=WARM_8192)
    assert found.anchored_on == WARM_8192.source and found.compile_cache == "cold"
    assert found.terms.activation_gib == pytest.approx(COLD_8192.signals.memory.peak_activation_gib, abs=0.02)
    assert off(COLD_8192, found) < 0.0005 and "(warm) moved +0.22 GiB to a cold compile cache" in found.basis
    assert found.kv_cache_tokens_low <= (COLD_8192.signals.kv_cache_tokens or 0) <= found.kv_cache_tokens_high
    naive = predict(COLD_8192, training, state="warm", anchor=WARM_8192)  # the anchor taken as it was
    assert naive.kv_cache_tokens_low > (COLD_8192.signals.kv_cache_tokens or 0)  # what the cold boot refuted


def test_a_cold_anchor_asked_warm_moves_the_other_way() -> None:
    training = [o for o in shipped("vllm") if o.source != WARM_8192.source]
    found = predict(WARM_8192, training, state="warm", anchor=COLD_8192)
    assert found.compile_cache == "warm" and off(WARM_8192, found) < 0.0005
    assert found.kv_cache_tokens_low <= (WARM_8192.signals.kv_cache_tokens or 0) <= found.kv_cache_tokens_high


def test_the_anchor_in_the_state_asked_for_is_picked_first() -> None:
    assert VLLM.pick_anchor([WARM_8192, COLD_8192], COLD_8192.serve, COLD_8192.gpu, "cold") == COLD_8192
    assert VLLM.pick_anchor([WARM_8192, COLD_8192], COLD_8192.serve, COLD_8192.gpu, "warm") == WARM_8192


def test_a_prediction_says_its_state_cold_by_default_and_eager_compiles_nothing() -> None:
    cal = VLLM.calibrate(list(shipped("vllm")), gpu=COLD_8192.gpu)

    def ask(serve: object, state: str | None) -> MemoryPrediction:
        return VLLM.predict(
            COLD_8192.shape, serve, COLD_8192.gpu, cal, model="m", architecture=None, version=None, compile_cache=state
        )

    default, cold, warm = ask(COLD_8192.serve, None), ask(COLD_8192.serve, "cold"), ask(COLD_8192.serve, "warm")
    assert (default.compile_cache, cold.compile_cache, warm.compile_cache) == ("cold", "cold", "warm")
    assert default.kv_cache_tokens == cold.kv_cache_tokens < warm.kv_cache_tokens
    eager = COLD_8192.serve.model_copy(update={"enforce_eager": True})
    assert ask(eager, "cold").compile_cache == ask(eager, "warm").compile_cache == "unused"
    assert ask(eager, "cold").kv_cache_tokens == ask(eager, "warm").kv_cache_tokens


SPIKED = ["l8b_graphs_mnbt2048_seqs128_util090.log", "l8b_graphs_mnbt8192_seqs128_util090.log"]


@pytest.mark.parametrize("log", SPIKED)
def test_a_cold_compile_s_spike_is_the_embedding_and_two_batches_of_hidden_states(log: str) -> None:
    """llama8b on the H100, cold: 1.01 GiB at 2,048 batched tokens (its eager boot there: 0.24), 1.10 at 8,192. With
    llama8b left out, the spike Qwen2.5-32B's cold boots at 8,192 place (its 1.45 GiB embedding and two batches of
    hidden states: 1.61) predicts both: the embedding once (0.98 GiB) and two batches of its hidden states."""
    boot = next(o for o in shipped("vllm") if o.source.endswith(log))
    found = predict(boot, [o for o in shipped("vllm") if o.shape != boot.shape], state="cold")
    assert "spike" in found.basis and found.terms.activation_gib is not None
    assert found.terms.activation_gib == pytest.approx(boot.signals.memory.peak_activation_gib, abs=0.02)
    assert off(boot, found) < 0.002


def test_without_a_cold_boot_the_spike_is_the_prior_and_said_so() -> None:
    eager = [o for o in shipped("vllm") if o.gpu is not None and is_eager(o.serve)]
    cal = VLLM.calibrate(eager)
    assert cal.terms["compile_spike"].boots == 0 and cal.terms["compile_spike"].basis.startswith("prior: ")


def test_a_graph_mode_record_that_does_not_say_its_state_places_no_activation_line() -> None:
    """A record written before redline read the compile cache: its other terms calibrate, its peak places no line."""
    unsaid = [o.model_copy(update={"signals": o.signals.model_copy(update={"compile_cache": None})}) for o in GRAPHS]
    eager = [o for o in shipped("vllm") if o.gpu is not None and is_eager(o.serve)]
    cal = VLLM.calibrate([*eager, *unsaid])
    assert cal.terms["activation_cold"].basis.startswith("no cold boot: the eager line")
    assert cal.terms["activation_warm"].basis.startswith("no warm boot: the eager line")
    assert cal.terms["activation_eager"].boots > 0 and cal.terms["cuda_graph_gib"].boots == len(unsaid)
