"""A campaign file read and resolved, the one way every operation reads one: its cells, baseline and base config.

    loaded = load("campaigns/c1.yml")      # base.from_ladder read relative to the file (its ceiling plus the knobs)
    loaded.cells, loaded.baseline, loaded.base, loaded.results

Below everything that reads a campaign (its plan, run, status, report, an A/B arm or a baseline naming a cell,
the known-good hook), so none of them imports another to read the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from redline.errors import InputError, RedlineError
from redline.ledger import read_ladder
from redline.ledger.campaign_file import read_campaign, results_dir
from redline.models import ServeConfig
from redline.models.campaign import Campaign, CellSpec
from redline.models.ladder import Ladder
from redline.policy import campaign as plans


@dataclass(frozen=True)
class Loaded:
    """A campaign file read and resolved: its cells, its baseline, its base serve config."""

    path: Path
    campaign: Campaign
    results: Path
    cells: list[CellSpec]
    baseline: str
    base: ServeConfig
    ladder: Ladder | None = None  # base.from_ladder's, read

    @property
    def base_from(self) -> str:
        """Where the base config comes from, in one line."""
        return plans.describe_base(self.campaign, self.ladder)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cells]


def load(path: str | Path) -> Loaded:
    """Read the campaign and its base (a ladder's ceiling when base.from_ladder names one, relative to the file)."""
    path = Path(path)
    campaign = read_campaign(path)
    ladder = None
    if campaign.base.from_ladder is not None:
        where = path.parent / Path(campaign.base.from_ladder).expanduser()
        try:
            ladder = read_ladder(where)
        except RedlineError as exc:
            raise InputError(f"base.from_ladder: {exc}") from exc
    cells = plans.expand_cells(campaign)
    return Loaded(
        path,
        campaign,
        results_dir(path, campaign),
        cells,
        plans.baseline_of(campaign, cells),
        plans.base_config(campaign, ladder),
        ladder,
    )


__all__ = ["Loaded", "load"]
