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

from redline.tools.ab_plan import ab_summary
from redline.tools.baseline import perf_baseline_diff, perf_baseline_record
from redline.tools.requests_rigor import PerfBaselineDiffRequest, PerfBaselineRecordRequest

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab"


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
