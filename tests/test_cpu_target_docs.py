"""The docs and the skills show the CPU target beside the GPU one (issue 20, item 9): a targets file for vLLM's CPU
build whose env is the one the demo gives it (redline.ops.ladder.demo.cpu_env), and the KV cap in bytes the demo
holds fixed (KV_CACHE_BYTES as --kv-cache-memory-bytes); each example block is a real targets file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redline.ops.ladder.demo import KV_CACHE_BYTES, cpu_env
from redline.targets import load_targets

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "skills" / "redline" / "references" / "cpu.md", ROOT / "README.md", ROOT / "docs" / "mcp.md"]
FOLDER = Path("/srv/redline")  # the examples' folder for the CPU build's temp files and compile cache


def targets_blocks(text: str) -> list[str]:
    return [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("targets:")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_doc_shows_a_cpu_target_with_the_demos_env_beside_a_gpu_target(doc: Path, tmp_path: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    blocks = [b for b in targets_blocks(text) if "cpu:" in b]
    assert blocks, f"{doc.name} shows no targets file with a cpu target"
    path = tmp_path / "targets.yml"
    path.write_text(blocks[0])
    specs = load_targets(path)
    assert "h200" in specs and specs["h200"].kind == "ssh"  # the GPU target beside it
    cpu = specs["cpu"]
    assert cpu.kind == "local" and cpu.env == cpu_env(FOLDER)
    assert f"--kv-cache-memory-bytes={KV_CACHE_BYTES}" in text  # the KV cap, in bytes, as the demo holds it
    at = text.index(f"--kv-cache-memory-bytes={KV_CACHE_BYTES}")  # the ladder's fixed knobs, as the demo's
    assert '"load_format": "dummy"' in text[max(0, at - 200) : at]  # the tiny model has no weights: else no boot
    assert "per host" in text  # and what a per-GPU figure is there


def test_the_redline_skill_routes_a_host_without_a_gpu_to_its_page() -> None:
    skill = (ROOT / "skills" / "redline" / "SKILL.md").read_text(encoding="utf-8")
    assert "## A host without a GPU" in skill and "[references/cpu.md](references/cpu.md)" in skill
    sweep = (ROOT / "skills" / "inference-tune-sweep" / "SKILL.md").read_text(encoding="utf-8")
    assert "../redline/references/cpu.md" in sweep
