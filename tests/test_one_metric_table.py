"""The campaign's metric directions are the one metric table's (models/metrics.py), not a second copy or name."""

from redline.models import campaign, metrics


def test_campaign_metrics_are_the_one_tables_directions() -> None:
    assert metrics.DIRECTIONS == {name: m.direction for name, m in metrics.METRICS.items()}
    assert campaign.DIRECTIONS is metrics.DIRECTIONS  # one object: nothing to keep in step
    assert not hasattr(campaign, "METRICS")  # and one name for it
