"""What a campaign's verdicts say, read from its results folder: which cells are done, the table, the champion.

    campaign_status(path); campaign_aggregate(path); champion_select(path, ChampionSelectRequest(top=3))

Plain functions that the MCP tools and the CLI both call; nothing here starts a server.
"""

from __future__ import annotations

from pathlib import Path

from redline.ledger.campaign_file import cells_of, read_verdicts
from redline.ledger.server_record import load_server
from redline.models.campaign_results import CampaignStatus, CampaignTable, CellState, CellVerdict, ChampionReport
from redline.ops.campaign import plan as plan_ops
from redline.ops.campaign.close import close_champion
from redline.ops.campaign.hint import next_hint
from redline.ops.campaign.noise import campaign_boots, champion_of, table_of
from redline.ops.campaign.outcome import noise_said
from redline.ops.campaign.search import search_state
from redline.ops.campaign_read import load_campaign
from redline.ops.requests import CampaignAggregateRequest, CampaignStatusRequest, ChampionSelectRequest
from redline.ops.workspace import workspace_of

# ---- reading results ----------------------------------------------------------------------------------------


def campaign_status(
    path: str | Path, request: CampaignStatusRequest | None = None, *, workspace: Path | None = None
) -> CampaignStatus:
    """Which cells are done (green or red), which ones a runner is in, which are pending; what to do next."""
    loaded = load_campaign(path, workspace)
    verdicts = read_verdicts(loaded.results, loaded.names)
    indexes = {r.rung_index for f in cells_of(loaded.results).server_files() if (r := load_server(f)) is not None}
    running = [c.name for i, c in enumerate(loaded.cells, 1) if i in indexes]
    states = [_state(name, verdicts.get(name), name in running) for name in loaded.names]
    green = sum(s.state == "green" for s in states)
    red = sum(s.state == "red" for s in states)
    search = search_state(loaded, plan_ops.plan_for(loaded, None, None)) if loaded.campaign.search else None
    return CampaignStatus(
        campaign=loaded.campaign.name,
        path=str(loaded.path),
        results=str(loaded.results),
        total=len(states),
        done=green + red,
        green=green,
        red=red,
        cells=states,
        running=running,
        noise=noise_said(loaded),
        search=search,
        next=next_hint(loaded, running=running, search=search),
    )


def _state(name: str, verdict: CellVerdict | None, running: bool) -> CellState:
    if verdict is not None:
        return CellState(cell=name, state=verdict.verdict, reason=verdict.reason)
    return CellState(cell=name, state="running" if running else "pending")


def campaign_aggregate(
    path: str | Path, request: CampaignAggregateRequest | None = None, *, workspace: Path | None = None
) -> CampaignTable:
    """The table of cells x concurrencies: the focus metric and the guards, each as every verdict reads it (the mean
    over the cell's boots where the noise was measured between boots; else over its benches on one boot)."""
    loaded = load_campaign(path, workspace)
    return table_of(loaded, campaign_boots(loaded))


def champion_select(
    path: str | Path, request: ChampionSelectRequest | None = None, *, workspace: Path | None = None
) -> ChampionReport:
    """The champion under the SLA in the baseline's regime, or "no improvement" inside the noise band. DRAFT."""
    request = request or ChampionSelectRequest()
    loaded = load_campaign(path, workspace)
    boots = campaign_boots(loaded)
    report = champion_of(loaded, boots, request.top)
    return close_champion(
        report, boots.verdicts, workspace_of(loaded.path.resolve())
    )  # the close: next levers, what is missing


__all__ = ["campaign_aggregate", "campaign_status", "champion_select"]
