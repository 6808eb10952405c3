"""The fresh boots a campaign's top cells owe: the champion and the runner-up booted again (the campaign's
`replicates` each), so the band every cell is judged by is the spread measured between boots (policy/ranking.py
campaign_band), not assumed. Read from the verdicts on disk, so a plan, a status and a run say the same."""

from __future__ import annotations

from redline.ledger.campaign_file import read_boots
from redline.ops.campaign.noise import campaign_boots, champion_of
from redline.ops.campaign_read import Loaded
from redline.policy.workload_champion import top_cells


def replicate_owed(loaded: Loaded, top: int, judged: int = 0) -> tuple[str, int] | None:
    """The next boot one of the `top` cells the champion ranks first owes (the cell, which of its boots: 2 and on),
    ranked by the champion's own report (ops/campaign/noise.py champion_of); None where none owes one (replicates:
    0, or the top two's all booted), or fewer than `judged` cells have a verdict."""
    campaign = loaded.campaign
    boots = campaign_boots(loaded)
    replicates = boots.replicates
    booted = sum(len(r) for r in replicates.values())
    if not campaign.replicates or len(boots.verdicts) < max(judged, 1) or booted >= 2 * campaign.replicates:
        return None  # at most the top two's: a ranking the replicates reorder does not boot a third cell again
    for cell in top_cells(champion_of(loaded, boots), top):
        booted = 1 + len(replicates.get(cell, []))
        if booted <= campaign.replicates:
            return cell, booted + 1
    return None


def replicates_left(loaded: Loaded) -> int:
    """How many replicate boots the campaign may still do at most: the top two's, less those on disk."""
    _, replicates = read_boots(loaded.results, loaded.names)
    return max(0, 2 * loaded.campaign.replicates - sum(len(r) for r in replicates.values()))


__all__ = ["replicate_owed", "replicates_left"]
