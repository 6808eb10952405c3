"""A campaign's boots and the noise they are judged by, read once for every tool that states a verdict of it
(champion_select, campaign_aggregate, campaign_report, campaign_status, campaign_run's answer, the search).

    boots = campaign_boots(loaded)    # every boot's verdict, and the spreads earlier boots of its setup measured
                                      # (ops/campaign_read.py: what evidence of a cell reads too)
    keep_measured(loaded)             # after a run: the spreads its own replicates measured, into noise.yml
"""

from __future__ import annotations

from collections.abc import Mapping

from redline.ledger.campaign_file import read_boots
from redline.models.campaign_results import CampaignTable, CellVerdict, ChampionReport
from redline.ops.campaign_read import Boots, Loaded, campaign_boots, setup_for
from redline.ops.spreads import keep_spreads, kept_elsewhere
from redline.ops.workspace import relative
from redline.policy import champion as champions
from redline.policy import workload_champion
from redline.policy.boots import campaign_band, campaign_noise, outlook


def keep_measured(loaded: Loaded) -> None:
    """Keep the spreads the campaign's own replicates measured, for its setup (a run that booted none keeps
    nothing)."""
    verdicts, replicates = read_boots(loaded.results, loaded.names)
    setup = setup_for(loaded, verdicts)
    if setup is None or not any(replicates.values()):
        return
    workspace = loaded.workspace
    noise = campaign_noise(loaded.campaign, verdicts, replicates)
    keep_spreads(workspace, setup, relative(workspace, loaded.path), noise)


def boot_seconds(verdicts: Mapping[str, CellVerdict]) -> float | None:
    """What one boot of a cell and its benches took here, on average (None before any)."""
    taken = [v.wall_s for v in verdicts.values()]
    return sum(taken) / len(taken) if taken else None


def noise_outlook(loaded: Loaded) -> str:
    """The band the campaign is or will be judged by, where it comes from, whether it leaves the campaign blind, and
    (before its first boot names its GPU and host) the spreads kept for its model and engine elsewhere."""
    boots = campaign_boots(loaded)
    band = campaign_band(loaded.campaign, boots.verdicts, boots.replicates, boots.earlier)
    said = outlook(loaded.campaign, band, boot_seconds(boots.verdicts))
    if boots.verdicts or loaded.campaign.replicates:
        return said
    engine = loaded.campaign.engine
    kept = kept_elsewhere(loaded.workspace, loaded.base.model, engine)
    if not kept:
        return said
    where = "; ".join(s.describe() for s in kept[:3])
    model = loaded.base.model
    return f"{said}. Earlier boots of {model} on {engine} measured a spread on {where}: a run there is judged by it"


def table_of(loaded: Loaded, boots: Boots) -> CampaignTable:
    """The table of the campaign's cells, each figure as every verdict reads it (over its boots)."""
    return champions.campaign_table(loaded.campaign, loaded.names, boots.verdicts, boots.replicates, boots.earlier)


def champion_of(loaded: Loaded, boots: Boots, top: int = 3) -> ChampionReport:
    """The champion report, every cell judged over its boots by each metric's band (no close: results.py adds it)."""
    c = loaded.campaign
    return workload_champion.select(
        c, loaded.names, loaded.baseline, boots.verdicts, top=top, replicates=boots.replicates, earlier=boots.earlier
    )


__all__ = ["Boots", "boot_seconds", "campaign_boots", "champion_of", "keep_measured", "noise_outlook", "table_of"]
