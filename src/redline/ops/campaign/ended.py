"""How a campaign run ends: succeeded, or failed where every cell it ran failed a clean-bench check (it measured
nothing a ranking can use), its answer kept with the cause and the fix (policy/unusable.py).

    return ended(loaded, await runner.run())   # RunFailed: the job ends failed, result.failed and next say why
"""

from __future__ import annotations

from redline.errors import RunFailed
from redline.ledger.campaign_file import read_verdicts
from redline.models.campaign_results import CampaignRunResult, CellVerdict
from redline.ops.campaign.load import Loaded
from redline.policy.unusable import unusable


def flagged_checks(verdict: CellVerdict) -> list[str]:
    """The clean-bench checks the cell's benches failed (prefix cache, client, GPU), in order, each once: of benches
    that measured (every request completed, the server healthy after), whose flag is what kept them out."""
    found = [
        c.check
        for r in verdict.results
        for t in r.repeats
        if t.figures is not None and t.figures.all_completed and t.server_healthy_after
        for c in t.checks
        if not c.ok
    ]
    return list(dict.fromkeys(found))


def ended(loaded: Loaded, result: CampaignRunResult) -> CampaignRunResult:
    """The run's answer; RunFailed (the answer kept, naming the cause and the fix) where every cell it ran failed a
    clean-bench check."""
    verdicts = read_verdicts(loaded.results, [o.cell for o in result.ran])
    flagged = {name: flagged_checks(v) for name, v in verdicts.items()}
    folders = ", ".join(f"cells/{name}" for name in verdicts)
    again = f"delete {folders} in the results folder {loaded.results.name}/ and run campaign_run again"
    failed = unusable(
        "cell",
        {name: v.reason if flagged[name] else None for name, v in verdicts.items()},
        [c for checks in flagged.values() for c in checks],
        again,
    )
    if failed is None:
        return result
    answer = result.model_copy(
        update={"reason": f"{result.reason}; FAILED: {failed.cause}", "next": failed.fix, "failed": failed.cause}
    )
    raise RunFailed(f"{failed.cause}. Fix: {failed.fix}", answer)


__all__ = ["ended", "flagged_checks"]
