"""skills/redline/ follows the Agent Skills format and names only tools the server has."""

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.models.ladder import Route
from tests.server.scenario import CAMPAIGN_TOOLS, EVERY_TOOL

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "redline"
DOCS = [SKILL / "SKILL.md", *sorted((SKILL / "references").glob("*.md")), ROOT / "docs" / "mcp.md"]


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
