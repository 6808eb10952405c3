"""The ceiling a campaign's ladder proved (base.from_ladder): the max_num_batched_tokens no next lever goes above.

ladder_ceiling(load_campaign("campaigns/c1.yml"))   # 16384, or None without a ladder (or one with no ceiling)
"""

from __future__ import annotations

from redline.ops.campaign.load import Loaded


def ladder_ceiling(loaded: Loaded) -> int | None:
    """The max_num_batched_tokens the campaign's ladder proved (as load_campaign read it), or None without one."""
    ceiling = loaded.ladder.ceiling if loaded.ladder is not None else None
    return ceiling.max_num_batched_tokens if ceiling is not None else None


__all__ = ["ladder_ceiling"]
