"""Issue 32, item 8 (search.yml): a campaign's search log is a workspace file, read back before the search resumes.

The real H200 search (tests/data/vllm-0.26.0-h200-landscape/landscape-h200-search) is copied, its log made to end in
a step whose cell has no verdict yet (a run killed while it booted, which the search boots again first) and then
planted: a cell the campaign does not have, or a NaN, Infinity or absurd estimate, is refused in one line naming the
file before any cell boots (the search used to fail with a bare KeyError).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from redline.errors import InputError
from redline.ops.campaign.plan import campaign_plan, load_campaign
from redline.ops.campaign.search import Search

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-landscape" / "landscape-h200-search"
STOP = "  - step: 6\n"


def planted(tmp_path: Path, step: str) -> Path:
    """The campaign, its log's stop replaced by `step` (a step the resumed search takes up first)."""
    shutil.copytree(DATA, tmp_path / "search")
    log = tmp_path / "search" / "l8b-landscape-search" / "search.yml"
    text = log.read_text()
    log.write_text(text[: text.index(STOP)] + step)  # the stop and `stopped:` after it gone: the search resumes
    return tmp_path / "search" / "campaign.yml"


def step(cell: str, estimate: str = "3000.0") -> str:
    return (
        f"  - step: 6\n    at: '2026-12-02T22:15:42Z'\n    cell: {cell}\n    why: planted\n    estimate: {estimate}\n"
    )


@pytest.mark.parametrize(
    ("cell", "estimate", "words"),
    [
        ("no-such-cell", "3000.0", "step 6 names cell 'no-such-cell', which campaign 'l8b-landscape-search' does not"),
        ("mnbt1024-seqs128-kvauto", ".nan", "estimate: Input should be a finite number"),
        ("mnbt1024-seqs128-kvauto", ".inf", "estimate: Input should be a finite number"),
    ],
    ids=["unknown cell", "NaN estimate", "infinite estimate"],
)
def test_search_log_untrusted_a_planted_step_is_refused_naming_the_file(
    tmp_path: Path, cell: str, estimate: str, words: str
) -> None:
    path = planted(tmp_path, step(cell, estimate))
    loaded = load_campaign(path)
    with pytest.raises(InputError) as refused:  # refused by the plan that reads the log, before any cell boots
        campaign_plan(path)
    message = str(refused.value)
    with pytest.raises(InputError, match="search.yml"):  # and by the search itself, however it is reached
        Search(loaded, campaign_plan(DATA / "campaign.yml"))
    assert message.startswith(f"{loaded.results / 'search.yml'}") and words in message and "\n" not in message, message
