"""The one close rule (policy/close.py) that a campaign's champion_select and an A/B's result both end with: the
same facts give the same close, whichever tool found them."""

from __future__ import annotations

from datetime import UTC, datetime

from redline.models.known_good import Evidence, KnownGoodEntry
from redline.models.lever import Lever
from redline.policy.close import NO_LEVER, close_status

ENTRY = KnownGoodEntry(
    model="/models/llama8b",
    hardware="NVIDIA H200",
    engine="vllm",
    engine_version="0.26.0",
    knobs={"max_num_batched_tokens": 8192},
    why="the A/B's better arm",
    evidence=[Evidence(kind="ab_arm", ref="ab/l8b-mnbt.yml", item="mnbt8192")],
    recorded_at=datetime(2026, 12, 1, tzinfo=UTC),
)
LEVER = Lever(
    lever="fp8_kv_cache",
    change="kv_cache_dtype: fp8",
    expected_gain_pct=36.0,
    expected="more KV tokens",
    cost="medium",
    cost_boots=6,
    score=6.0,
    gate="an A/B and an accuracy eval",
)


def test_a_verdict_with_its_entry_and_a_lever_is_closed() -> None:
    close = close_status(
        "mnbt8192", verdict_missing=None, entry=ENTRY, record_with="from_ab and arm=mnbt8192", levers=[LEVER]
    )
    assert close.closed and close.missing == [] and close.next_lever == "fp8_kv_cache"
    assert close.known_good == ENTRY.key().describe()


def test_each_missing_piece_is_named_with_the_call_that_makes_it() -> None:
    close = close_status(
        "c2", verdict_missing="a VERDICT: an A/B", entry=None, record_with="from_campaign and cell=c2", levers=[]
    )
    assert not close.closed and close.known_good is None and close.next_lever is None
    assert close.missing == [
        "a VERDICT: an A/B",
        "its known-good config: call known_good_record with from_campaign and cell=c2 (and why)",
        NO_LEVER,
    ]


def test_a_campaign_and_an_ab_with_the_same_facts_get_the_same_close_but_for_how_to_record() -> None:
    facts = {"verdict_missing": "a VERDICT", "entry": None, "levers": [LEVER]}
    campaign = close_status("x", record_with="from_campaign and cell=x", **facts)  # type: ignore[arg-type]
    ab = close_status("x", record_with="from_ab and arm=x", **facts)  # type: ignore[arg-type]
    assert campaign.model_dump(exclude={"missing"}) == ab.model_dump(exclude={"missing"})
    assert [m.replace("from_campaign and cell", "from_ab and arm") for m in campaign.missing] == ab.missing
