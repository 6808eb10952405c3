"""The one close rule for a champion, a campaign's or an A/B's: it is closed only when a same-node A/B made it a
VERDICT, its known-good config is recorded, a next lever is named and, where it turns on a lever that can change the
model's answers, an accuracy gate passed on it (policy/accuracy.py gate_missing); until then `missing` says what is,
each with the call to make. A pure function of what the caller found.

    close_status("mnbt8192", verdict_missing=None, entry=found, record_with="from_ab and arm=mnbt8192", levers=levers)
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.models.known_good import KnownGoodEntry
from redline.models.lever import CloseStatus, Lever

NO_LEVER = "a next lever: none applies, so document the speed-of-light wall it reached"


def close_status(
    champion: str,
    *,
    verdict_missing: str | None,
    entry: KnownGoodEntry | None,
    record_with: str,
    levers: Sequence[Lever],
    accuracy_missing: str | None = None,
) -> CloseStatus:
    """`verdict_missing`: what a VERDICT still needs (None: it is one); `entry`: the champion's known-good entry, if
    recorded; `record_with`: the arguments known_good_record takes to record it; `accuracy_missing`: what the accuracy
    gate still needs (None: no gate is needed, or it passed)."""
    missing = [verdict_missing] if verdict_missing is not None else []
    if accuracy_missing is not None:
        missing.append(accuracy_missing)
    if entry is None:
        missing.append(f"its known-good config: call known_good_record with {record_with} (and why)")
    if not levers:
        missing.append(NO_LEVER)
    return CloseStatus(
        champion=champion,
        closed=not missing,
        known_good=entry.key().describe() if entry else None,
        next_lever=levers[0].lever if levers else None,
        missing=missing,
    )


__all__ = ["NO_LEVER", "close_status"]
