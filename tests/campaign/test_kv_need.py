"""A campaign's KV need is each workload's own load: its top concurrency's requests at their whole length, the largest
over the workloads. The 8B landscape (issue 42) runs 6,144-token prompts at 4 requests and 1,024-token ones at 128:
it needs 147,456 tokens at once, not the 802,816 of the longest prompt at the highest concurrency that its plan first
counted, which judged six cells that booted and held (its defaults among them) infeasible, so a search would never
have booted them."""

from __future__ import annotations

from pathlib import Path

from redline.ledger.campaign_file import read_verdict
from redline.ops.campaign_read import load_campaign
from redline.ops.experiment.predicted import for_need

LANDSCAPE = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h100-landscape-8b" / "landscape-8b"


def test_the_need_is_each_workload_s_own_load_the_largest() -> None:
    campaign = load_campaign(LANDSCAPE / "campaign.yml").campaign
    assert campaign.longest == 6144 + 128 and max(campaign.concurrencies) == 128
    assert campaign.kv_need == max(4 * (6144 + 128), 128 * (1024 + 128)) == 147_456


def test_a_prediction_recorded_by_the_old_count_is_judged_again_by_the_workloads_own_loads() -> None:
    loaded = load_campaign(LANDSCAPE / "campaign.yml")
    verdict = read_verdict(loaded.results, "defaults")
    assert verdict is not None and verdict.predicted is not None
    recorded = verdict.predicted
    assert (recorded.feasible, recorded.needed_tokens) == ("no", 802_816)  # as the run judged it
    again = for_need(recorded, loaded.campaign.kv_need)
    assert (again.feasible, again.needed_tokens) == ("yes", 147_456)
    assert again.kv_cache_tokens_high == recorded.kv_cache_tokens_high  # the memory model's figures unchanged
    assert "147,456 KV tokens fit in the band's low end (448,656)" in again.why
    assert for_need(again, 147_456) is again
