"""What to do next with a campaign, in one sentence: the one function campaign_status, campaign_run's answer and its
dry run all say it with, from what the results folder holds. It names MCP tools and their parameters; the CLI prints
it in its own commands (cli/words.py).

    next_hint(loaded, running=[], search=state)              # campaign_status, and a run's answer once it ends
    next_hint(loaded, running=[], search=state, dry_run=True)  # a dry run: run what the plan lists
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.ledger.campaign_file import read_verdicts
from redline.models.search import SearchState
from redline.ops.campaign.replicates import replicate_owed
from redline.ops.campaign_read import Loaded
from redline.ops.request_base import ACK_FLAG

CHAMPION = "call champion_select for the champion (a DRAFT: confirm it with ab_run), then campaign_report"


def search_further(stopped: str) -> str:
    """How to search past a stop: a larger budget, or more patience; nothing where no cell is left to try."""
    if "budget" in stopped:
        return "to search further, give it a larger budget (search.budget_boots or search.budget_gpu_s in the file)"
    if "in a row" in stopped:
        return "to search further, give it more patience (search.patience in the file)"
    return "no cell is left that could beat the best"


def next_hint(
    loaded: Loaded, *, running: Sequence[str] = (), search: SearchState | None = None, dry_run: bool = False
) -> str:
    """The next step: wait for a running server, run what is left, read a red cell, boot the replicates the top
    cells owe, or read the champion; for a dry run with boots to do, run them."""
    verdicts = read_verdicts(loaded.results, loaded.names)
    pending = [name for name in loaded.names if name not in verdicts]
    reds = [name for name, v in verdicts.items() if v.verdict == "red"]
    if running:
        return (
            f"a server is recorded as running for {', '.join(repr(c) for c in running)}: wait for its job "
            "(job_status), or call campaign_run again to stop what a killed run left and resume"
        )
    if search is not None:
        if search.stopped is not None and search.resume.startswith("boots nothing"):
            return f"the search stopped ({search.stopped}): {CHAMPION}; {search_further(search.stopped)}"
        return f"call campaign_run{_ack(dry_run)}: the search {search.resume}"
    if reds and pending and not loaded.campaign.continue_on_red:
        return (
            f"cell {reds[0]!r} is red: read cells/{reds[0]}/verdict.yml; to go on past it set continue_on_red: true "
            "and call campaign_run again"
        )
    if pending:
        return f"call campaign_run{_ack(dry_run)}: {len(pending)} cells to run, from {pending[0]!r}"
    if (owed := replicate_owed(loaded, 2)) is not None:
        return (
            f"call campaign_run{_ack(dry_run)}: it boots {owed[0]} again (its boot {owed[1]}), so the noise band is "
            "measured between boots"
        )
    return f"every cell has a verdict: {CHAMPION}"


def _ack(dry_run: bool) -> str:
    return f" with {ACK_FLAG}=true" if dry_run else ""


__all__ = ["CHAMPION", "next_hint", "search_further"]
