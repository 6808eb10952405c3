"""Issue 32, item 8 (frontier.yml): the lever frontier is a workspace file; a planted NaN, Infinity or negative cost
or gain in its untried levers is refused in one line naming the file and the field (models/lever.py's bounds, which
every reader of frontier.yml validates through), never sorted or answered as a number."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from redline.errors import InputError
from redline.ledger import yamlfile
from redline.models.frontier import Frontier, FrontierFile
from redline.models.lever import Lever
from redline.ops.evidence.frontier import frontier_path, lever_frontier
from redline.ops.requests_evidence import LeverFrontierRequest

LEVER = Lever(
    lever="fp8_kv_cache",
    change="kv_cache_dtype fp8",
    expected_gain_pct=12.0,
    expected="more KV blocks",
    cost="low",
    cost_boots=6,
    score=12.0,
    gate="an A/B of 2 arms x 3 trials",
)


def frontier(ws: Path) -> Path:
    made = Frontier(
        model="/models/llama8b",
        hardware="NVIDIA H200",
        engine="vllm",
        engine_version="0.26.0",
        untried=[LEVER],
        updated_at=datetime(2026, 12, 2, tzinfo=UTC),
    )
    path = frontier_path(ws)
    path.write_text(yamlfile.dumps(yamlfile.to_yaml(FrontierFile(frontiers=[made]).model_dump(mode="json"))))
    return path


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("cost_boots", "-6", "greater than or equal to 1"),
        ("score", ".nan", "finite number"),
        ("score", ".inf", "finite number"),
        ("expected_gain_pct", "-12.0", "greater than or equal to 0"),
        ("expected_gain_pct", "1.0e+300", "less than or equal to"),
    ],
)
def test_frontier_untrusted_a_planted_cost_or_gain_is_refused_naming_the_file(
    tmp_path: Path, field: str, value: str, words: str
) -> None:
    path = frontier(tmp_path)
    assert lever_frontier(tmp_path, LeverFrontierRequest()).frontiers[0].untried == [LEVER]
    text = path.read_text()
    planted = text.replace(f"{field}: {getattr(LEVER, field)}", f"{field}: {value}", 1)
    assert planted != text
    path.write_text(planted)
    with pytest.raises(InputError) as refused:
        lever_frontier(tmp_path, LeverFrontierRequest())
    message = str(refused.value)
    assert f"frontier.yml is invalid: frontiers[0].untried[0].{field}: " in message and words in message, message
    assert str(path) in message and "\n" not in message
