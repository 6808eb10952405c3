"""skills/inference-tune-sweep/ follows the Agent Skills format, names the campaign tools, and its asset is real."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.ops.campaign.plan import load_campaign
from redline.ops.requests import EXPERIMENT_OPERATIONS
from redline.policy import campaign as policy

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "inference-tune-sweep"
DOCS = [SKILL / "SKILL.md", *sorted((SKILL / "references").glob("*.md"))]
CAMPAIGN_TOOLS = set(EXPERIMENT_OPERATIONS)
OTHER_TOOLS = {"job_status", "job_cancel", "job_list"}


def frontmatter(path: Path) -> tuple[dict, str]:
    m = re.match(r"^---\n(.*?)\n---\n(.*)$", path.read_text(encoding="utf-8"), re.S)
    assert m, f"{path} must start with a --- YAML frontmatter block ---"
    return YAML(typ="safe", pure=True).load(m.group(1)), m.group(2)


def test_the_frontmatter_is_valid() -> None:
    meta, body = frontmatter(SKILL / "SKILL.md")
    assert set(meta) <= {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
    assert meta["name"] == SKILL.name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", meta["name"])
    assert 1 <= len(meta["description"]) <= 1024 and "Use when" in meta["description"]
    assert len(meta.get("compatibility", "")) <= 500 and len(body.splitlines()) < 500


def test_the_skill_routes_through_every_campaign_tool() -> None:
    _, body = frontmatter(SKILL / "SKILL.md")
    assert {t for t in CAMPAIGN_TOOLS if f"`{t}`" in body} == CAMPAIGN_TOOLS
    assert "campaign_report" in CAMPAIGN_TOOLS


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_call_only_tools_that_exist_and_link_to_files_that_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    called = set(re.findall(r"\b([a-z]+_[a-z_]+)\(", text))
    assert called <= CAMPAIGN_TOOLS | OTHER_TOOLS, called - CAMPAIGN_TOOLS - OTHER_TOOLS
    for link in re.findall(r"\]\(([^)#]+)", text):
        if not link.startswith("http"):
            assert (doc.parent / link).exists(), f"{doc.name} links to {link}, which does not exist"


def test_the_redline_skill_points_here_once_a_ceiling_is_recorded() -> None:
    text = (ROOT / "skills" / "redline" / "SKILL.md").read_text(encoding="utf-8")
    assert "now tune under this ceiling" in text and "../inference-tune-sweep/SKILL.md" in text


def test_the_example_campaign_is_a_real_campaign_that_plans(tmp_path: Path) -> None:
    path = tmp_path / "campaign.yml"
    shutil.copy(SKILL / "assets" / "campaign.yml", path)
    loaded = load_campaign(path)
    plan = policy.plan_campaign(loaded.campaign, loaded.base, path=str(path))
    assert (plan.boots, plan.benches) == (6, 18) and plan.baseline == "mnbt8192-seqs128"
    assert all(cell.serve.max_num_seqs >= 128 for cell in plan.cells)


def test_the_example_campaign_across_engines_plans_one_vllm_cell_and_one_sglang_cell(tmp_path: Path) -> None:
    path = tmp_path / "campaign.yml"
    shutil.copy(SKILL / "assets" / "campaign-engines.yml", path)
    loaded = load_campaign(path)
    plan = policy.plan_campaign(loaded.campaign, loaded.base, path=str(path))
    assert [(c.name, c.engine, c.bench_backend) for c in plan.cells] == [
        ("vllm", "vllm", "vllm"),
        ("sglang", "sglang", "openai"),
    ]
    assert plan.baseline == "vllm" and plan.bench_client == "vllm" and (plan.boots, plan.benches) == (2, 18)
    assert "--disable-radix-cache" not in plan.cells[1].boot_command  # caching: each engine's default, on for both
