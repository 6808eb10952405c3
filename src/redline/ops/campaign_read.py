"""A campaign file read and resolved, the one way every operation reads one (a campaign's own, an A/B arm that names
a campaign's cell, the evidence a cell is): its cells, baseline and base config, its ladder's ceiling.

    loaded = load_campaign("campaigns/c1.yml")  # base.from_ladder read relative to the file: its ceiling, the knobs;
                                                # each trace workload's trace, read (ops/traces.py)
    loaded.cells, loaded.baseline, loaded.base, loaded.results
    loaded = load_named(workspace, "campaigns/c1.yml", "from_campaign")   # a name a tool was given

Below everything that reads a campaign (its plan, run, status, report, an A/B arm or a baseline naming a cell,
the known-good evidence), so none of them imports another to read it, and ops/ab and ops/evidence nothing of
ops/campaign. base.from_ladder goes through the one path checker (ops/workspace.py `inside`) here, in the loader,
so no reader can skip it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from redline.errors import InputError, RedlineError
from redline.ledger import read_ladder
from redline.ledger.campaign_file import read_boots, read_campaign, results_dir
from redline.models import ServeConfig
from redline.models.campaign import Campaign, CellSpec
from redline.models.campaign_results import CellVerdict
from redline.models.ladder import Ladder
from redline.models.metrics import Band
from redline.models.spreads import Setup
from redline.ops.spreads import earlier_for, setup_of
from redline.ops.traces import with_traces
from redline.ops.workspace import inside, relative, workspace_of
from redline.policy import campaign as plans


@dataclass(frozen=True)
class Loaded:
    """A campaign file read and resolved: its cells, its baseline, its base serve config (and its ladder's)."""

    path: Path
    workspace: Path  # the one it is read in: base.from_ladder stays inside it; its recorded boots calibrate the plan
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


def from_ladder_path(path: Path, campaign: Campaign, workspace: Path | None = None) -> Path | None:
    """The ladder base.from_ladder names (relative to the campaign file), checked to stay inside the workspace
    (default: the one the file's layout names); None without one."""
    if campaign.base.from_ladder is None:
        return None
    root = workspace if workspace is not None else workspace_of(Path(path).resolve())
    return inside(root, campaign.base.from_ladder, "base.from_ladder", base=path.parent, example="../ladders/l8b.yml")


def load_campaign(path: str | Path, workspace: Path | None = None, campaign: Campaign | None = None) -> Loaded:
    """Read the campaign and its base (a ladder's ceiling when base.from_ladder names one, relative to the file,
    inside `workspace`: the server's, else the one the file's layout names). `campaign`: the file as a caller
    already read it for its own checks (the MCP wiring), so it is parsed once."""
    path = Path(path)
    workspace = workspace if workspace is not None else workspace_of(path.resolve())
    campaign = with_traces(campaign if campaign is not None else read_campaign(path), path, workspace)
    ladder = None
    if (where := from_ladder_path(path, campaign, workspace)) is not None:
        try:
            ladder = read_ladder(where)
        except RedlineError as exc:
            raise InputError(f"base.from_ladder: {exc}") from exc
    cells = plans.expand_cells(campaign)
    return Loaded(
        path,
        workspace,
        campaign,
        results_dir(path, campaign),
        cells,
        plans.baseline_of(campaign, cells),
        plans.base_config(campaign, ladder),
        ladder,
    )


def load_named(workspace: Path, name: str, what: str) -> Loaded:
    """The campaign file a tool names (`what`: the argument), inside the workspace, its base.from_ladder too."""
    return load_campaign(inside(workspace, name, what), workspace)


def ladder_ceiling(loaded: Loaded) -> int | None:
    """The max_num_batched_tokens the campaign's ladder proved (as load_campaign read it), or None without one."""
    ceiling = loaded.ladder.ceiling if loaded.ladder is not None else None
    return ceiling.max_num_batched_tokens if ceiling is not None else None


# ---- its boots --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Boots:
    """Every boot of a campaign's cells: each cell's first verdict, the replicates of those booted again, and each
    metric's band earlier boots of the campaign's setup measured (empty: none kept)."""

    verdicts: dict[str, CellVerdict]
    replicates: dict[str, list[CellVerdict]]
    earlier: Mapping[str, Band]


def setup_for(loaded: Loaded, verdicts: Mapping[str, CellVerdict]) -> Setup | None:
    """The campaign's setup: its baseline cell's (else its first booted cell's) model, engine, GPU and host."""
    first = verdicts.get(loaded.baseline) or next(iter(verdicts.values()), None)
    return setup_of(first.context) if first is not None else None


def campaign_boots(loaded: Loaded) -> Boots:
    """Every boot of the campaign's cells, and the spreads earlier boots of its setup measured."""
    verdicts, replicates = read_boots(loaded.results, loaded.names)
    setup = setup_for(loaded, verdicts)
    workspace = loaded.workspace
    earlier = {} if setup is None else earlier_for(workspace, setup, besides=relative(workspace, loaded.path))
    return Boots(verdicts, replicates, earlier)


__all__ = [
    "Boots",
    "Loaded",
    "campaign_boots",
    "from_ladder_path",
    "ladder_ceiling",
    "load_campaign",
    "load_named",
    "setup_for",
]
