"""One noise model (policy/noise.py) behind every verdict: the A/B's judge and perf_baseline_diff, fed the same three
trials per arm, cannot disagree (issue 20, item 1).

The real H200 A/B (tests/data/vllm-0.26.0-h200-ab): mnbt8192 is 4.7% above the baseline in output throughput, beyond
the diff's 3% tolerance, but Welch's test at 0.05 cannot tell it from the baseline's spread (2,885 ± 190 tok/s). Before
the one noise model the A/B said "inside the noise" and the diff said GREEN ("improved +4.68%"): ship it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from redline.models.context import Node
from redline.models.load import Load
from redline.ops.ab.result import ab_summary
from redline.ops.evidence.baseline import perf_baseline_diff, perf_baseline_record
from redline.ops.requests_evidence import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from redline.policy.verdict import ab_verdict
from redline.policy.verdict_rules import TrialObservation

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab"
NODE = Node(hostname="cpu-a", machine_id="m-a")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "ab", tmp_path / "ab")
    return tmp_path


def test_the_ab_and_the_baseline_diff_say_inside_the_noise_on_the_same_three_trials(workspace: Path) -> None:
    _, _, verdict = ab_summary(workspace, "l8b-mnbt")
    (ab,) = verdict.comparisons
    assert (ab.arm, ab.metric, ab.n) == ("mnbt8192", "output_throughput", (3, 3))
    assert ab.outcome == "no_improvement" and "inside the noise" in ab.why

    perf_baseline_record(workspace, PerfBaselineRecordRequest(name="mnbt2048", ab="l8b-mnbt", arm="mnbt2048"))
    diff = perf_baseline_diff(workspace, PerfBaselineDiffRequest(baseline="mnbt2048", ab="l8b-mnbt", arm="mnbt8192"))
    focus = diff.points[0].metrics[0]
    assert focus.metric == "output_throughput" and focus.delta_pct == pytest.approx(ab.delta_pct, abs=1e-3)
    assert diff.colour != "GREEN", diff.reason
    assert focus.status == "within" and focus.noise is not None and "inside the noise" in focus.noise.says
    assert ab.noise is not None and (focus.noise.basis, focus.noise.p_value) == ("trials", ab.noise.p_value)


def test_the_verdict_states_the_smallest_effect_it_could_have_detected(workspace: Path) -> None:
    _, _, verdict = ab_summary(workspace, "l8b-mnbt")
    assert verdict.detectable == "smallest detectable effect: 19.1% (mnbt8192 at c=128, trials)"
    # output throughput inside the noise, but its median TTFT 2.5x the baseline's: every metric is judged
    assert verdict.summary.startswith("VERDICT: every other arm is worse than mnbt2048: mnbt8192 every difference")
    assert "; smallest detectable effect: 19.1%" in verdict.summary
    assert "better by 4.68%" in verdict.comparisons[0].why  # the sign by the metric's direction, not a raw +4.68%


def cpu_trial(arm: str, k: int, itl: float, tpot: float = 8.0, throughput: float = 207.0) -> TrialObservation:
    return TrialObservation(
        arm=arm,
        trial=k,
        ok=True,
        node=NODE,
        cache="warm",
        graphs="eager",
        prefix_caching=None,
        workload=("random", 64, 16),
        num_prompts={Load(2): 8},
        metrics={Load(2): {"median_itl_ms": itl, "median_tpot_ms": tpot, "output_throughput": throughput}},
    )


def test_a_latency_claim_on_an_implausible_itl_falls_back_to_the_tpot_and_names_the_flag() -> None:
    """The CPU build's ITL (0.003 ms in some trials, 3-5 ms in others, TPOT 8 ms) averaged would be a 60% 'win'."""
    trials = [cpu_trial("base", k, itl) for k, itl in enumerate([4.1, 3.2, 4.8], 1)]
    trials += [cpu_trial("cand", k, itl, tpot=8.0 + 0.01 * k) for k, itl in enumerate([0.003, 4.9, 0.003], 1)]
    v = ab_verdict(trials, arms=["base", "cand"], baseline="base", claim="latency", metric="median_itl_ms")
    assert v.metric == "median_tpot_ms" and v.fell_back is not None and "median_itl_ms is implausible" in v.fell_back
    assert {(f.metric, f.rule, f.where) for f in v.flags} >= {("median_itl_ms", "itl_below_tpot", "cand at c=2")}
    assert v.outcome != "improvement" and v.comparisons[0].metric == "median_tpot_ms"
    assert "the claim rests on median_tpot_ms instead" in v.summary and "implausible, not claimed on" in v.summary


def test_a_claim_on_a_metric_whose_spread_exceeds_its_mean_is_refused() -> None:
    trials = [cpu_trial("base", k, 8.0, throughput=tp) for k, tp in enumerate([200.0, 210.0, 205.0], 1)]
    trials += [cpu_trial("cand", k, 8.0, throughput=tp) for k, tp in enumerate([5.0, 900.0, 4.0], 1)]
    v = ab_verdict(trials, arms=["base", "cand"], baseline="base", claim="throughput")
    (c,) = v.comparisons
    assert c.outcome == "untestable" and c.noise is not None and c.noise.outcome == "flagged"
    assert v.outcome == "untestable" and v.champion is None
    assert "no claim: output_throughput is implausible" in v.summary and "spread_over_mean" in {f.rule for f in v.flags}
