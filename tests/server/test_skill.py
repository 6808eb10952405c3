"""skills/redline/ follows the Agent Skills format and names only tools the server has."""

import re
from pathlib import Path
from typing import Any, get_args

import pytest
from mcp import Client
from pydantic import BaseModel
from ruamel.yaml import YAML

from redline.ledger.campaign_file import write_campaign
from redline.models.campaign_results import ChampionReport, RankedCell
from redline.models.ladder import Route
from redline.models.verdict import AbVerdict, ArmOutcome, Outcome
from redline.ops.requests import OPERATIONS
from redline.server.app import build_server
from tests.campaign.helpers import campaign as campaign_file
from tests.campaign.helpers import verdict, write_verdict
from tests.server.helpers import Env, call
from tests.server.scenario import CAMPAIGN_TOOLS, EVERY_TOOL

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "redline"
DOCS = [SKILL / "SKILL.md", *sorted((SKILL / "references").glob("*.md")), ROOT / "docs" / "mcp.md"]


def _outcomes(model: type[BaseModel]) -> set[str]:
    """The values a model's `outcome` field can take."""
    annotation: Any = model.model_fields["outcome"].annotation
    return set(get_args(annotation))


def frontmatter(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert m, f"{path} must start with a --- YAML frontmatter block ---"
    return YAML(typ="safe", pure=True).load(m.group(1)), m.group(2)


def test_skill_frontmatter_is_valid() -> None:
    meta, body = frontmatter(SKILL / "SKILL.md")
    assert set(meta) <= {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
    assert meta["name"] == SKILL.name == "redline"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", meta["name"]) and len(meta["name"]) <= 64
    assert 1 <= len(meta["description"]) <= 1024 and "Use when" in meta["description"]
    assert len(meta.get("compatibility", "")) <= 500
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.get("metadata", {}).items())
    assert len(body.splitlines()) < 500


def test_skill_routes_every_route_of_the_ladder() -> None:
    _, body = frontmatter(SKILL / "SKILL.md")
    for route in Route.__args__:
        assert f"`{route}`" in body, route


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_name_only_tools_the_server_has_and_link_to_files_that_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    called = set(re.findall(r"\b([a-z]+_[a-z_]+)\(", text))
    tool_like = {
        name for name in called if name.split("_")[0] in ("ladder", "rung", "smoke", "ceiling", "parse", "job")
    }
    assert tool_like <= EVERY_TOOL, tool_like - EVERY_TOOL
    for link in re.findall(r"\]\(([^)#]+)", text):
        if not link.startswith("http"):
            assert (doc.parent / link).exists(), f"{doc.name} links to {link}, which does not exist"


def test_the_skill_names_every_tool() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in DOCS[:-1])
    tools = EVERY_TOOL - CAMPAIGN_TOOLS  # skills/inference-tune-sweep names those (tests/campaign/test_skill.py)
    assert {name for name in tools if f"`{name}" in text or f"{name}(" in text} == tools


def test_the_example_ladder_is_a_real_ladder() -> None:
    from redline.ledger.ladder_file import read_ladder

    ladder = read_ladder(SKILL / "assets" / "example-ladder.yml")
    assert ladder.rungs and ladder.ceiling is not None and not any(r.simulated for r in ladder.rungs)


# ---- every route an agent can reach ends in a tool call (issue 20, item 10) --------------------------------------

SKILLS = ROOT / "skills"
SWEEP = SKILLS / "inference-tune-sweep"


def route_table(doc: Path, header: str) -> dict[str, str]:
    """The rows of the table in `doc` whose first header cell is `header`: each backticked value of a row's first
    cell (or the cell itself, where it has none) -> the whole row."""
    rows: dict[str, str] = {}
    inside = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            inside = False
            continue
        first = line.strip().strip("|").split("|")[0].strip()
        if first == header:
            inside = True
        elif inside and set(first) - set("- "):
            for value in re.findall(r"`([^`]+)`", first) or [first]:
                rows[value] = line
    return rows


def tools_in(text: str) -> set[str]:
    return {name for name in re.findall(r"\b([a-z]+(?:_[a-z]+)+)\b", text) if name in OPERATIONS}


ROUTES = [
    ("ladder route", SKILL / "SKILL.md", "`next.route`", [*Route.__args__, "(the ladder file does not exist)"]),
    ("champion_select outcome", SWEEP / "references" / "champion.md", "`outcome`", list(_outcomes(ChampionReport))),
    ("ab_run outcome", SKILL / "references" / "verdict.md", "`verdict.outcome`", [*_outcomes(AbVerdict), "DRAFT"]),
]


@pytest.mark.parametrize(("what", "doc", "header", "values"), ROUTES, ids=[r[0] for r in ROUTES])
def test_every_outcome_and_route_has_a_row_that_ends_in_a_real_tool_call(
    what: str, doc: Path, header: str, values: list[str]
) -> None:
    rows = route_table(doc, header)
    assert set(values) <= set(rows), f"{doc.name} has no row for {what} {sorted(set(values) - set(rows))}"
    for value in values:
        called = tools_in(rows[value].split("|", 2)[2])  # past the value's own cell
        assert called, f"{doc.name}: {what} {value!r} names no MCP tool to call: {rows[value]}"
        assert called <= set(OPERATIONS)


def test_the_skills_name_every_per_arm_per_cell_and_per_comparison_outcome() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(SKILLS.rglob("*.md")))
    values = _outcomes(ArmOutcome) | _outcomes(RankedCell) | set(Outcome.__args__)
    missing = {v for v in values if f"`{v}`" not in text}
    assert not missing, f"the skills never say what these outcomes mean: {sorted(missing)}"


def test_the_no_champion_route_says_what_the_tools_say_and_names_each_next_call() -> None:
    text = (SWEEP / "references" / "champion.md").read_text(encoding="utf-8")
    section = text.split("## No champion", 1)[1].split("\n## ", 1)[0]
    for said in ("`champion: null`", "`close: null`", "`note`", "`detectable`", "`next_levers`", "`ranked`"):
        assert said in section, said
    assert {"campaign_init", "ab_run", "perf_baseline_record", "known_good_config"} <= tools_in(section)
    assert "Never call the best of the ranked cells a win" in section
    ab = route_table(SKILL / "references" / "verdict.md", "`verdict.outcome`")["no_improvement"]
    assert "`result.close` are null" in ab and {"perf_baseline_record", "ab_run"} <= tools_in(ab)


async def test_champion_select_with_no_champion_says_what_the_skill_quotes(env: Env) -> None:
    """The no-champion case through the real server: the fields the skill names are there, and its note starts as
    the skill quotes it."""
    campaign = campaign_file(name="c1")
    path = env.workspace / "campaigns" / "c1.yml"
    path.parent.mkdir()
    write_campaign(path, campaign)
    for v in (verdict("mnbt2048", {1: 50, 8: 100}), verdict("mnbt8192", {1: 50, 8: 100.5})):  # inside 3%
        write_verdict(path.parent / "c1", v.model_copy(update={"campaign": "c1"}))
    async with Client(build_server(env.config)) as client:
        report = await call(client, "champion_select", campaign="campaigns/c1.yml")
    assert (report["outcome"], report["champion"], report["close"]) == ("no_improvement", None, None)
    section = (SWEEP / "references" / "champion.md").read_text(encoding="utf-8").split("## No champion", 1)[1]
    quoted = re.search(r'`note`: "([^"]+)"', section)
    assert quoted is not None and report["note"].startswith(quoted.group(1)), report["note"]
    outcomes = {c["cell"]: c["outcome"] for c in report["ranked"]}
    assert report["detectable"] and outcomes == {"mnbt2048": "baseline", "mnbt8192": "no_improvement"}
