"""The ceiling a campaign's ladder proved (base.from_ladder): the max_num_batched_tokens no next lever goes above.

ladder_ceiling(load("campaigns/c1.yml"))   # 16384, or None without a ladder (or one with no ceiling)
"""

from __future__ import annotations

from pathlib import Path

from redline.errors import RedlineError
from redline.ledger import read_ladder
from redline.ops.campaign.load import Loaded


def ladder_ceiling(loaded: Loaded) -> int | None:
    """The max_num_batched_tokens the campaign's ladder proved, or None without one."""
    name = loaded.campaign.base.from_ladder
    if name is None:
        return None
    try:
        ladder = read_ladder(loaded.path.parent / Path(name).expanduser())
    except RedlineError:
        return None  # load() read it a moment ago; a ladder gone since leaves the levers without a ceiling
    return ladder.ceiling.max_num_batched_tokens if ladder.ceiling is not None else None


__all__ = ["ladder_ceiling"]
