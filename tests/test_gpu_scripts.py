"""The GPU scripts run where CI never does (the lent H200), so they are run here on the fake engine: a script that
has drifted from the package's API fails here, not in a device call that costs GPU time. gpu-campaign.py plans a
campaign (dry run), then boots one cell and stops (--cells 1), and the next call resumes after it; a call with less
time left than a cell takes (--cell-seconds) boots none rather than cut one off half-way. The traffic plans (issue 41)
dry-run as the script that runs them lays them out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from redline.models.trace import parse_trace
from redline.ops.campaign.results import campaign_status
from redline.tinymodel import write_tiny_llama
from tests.campaign.helpers import FAST, make_fake, wait_until_gone
from tests.server.helpers import FAKE_VLLM

ROOT = Path(__file__).resolve().parents[1]


def gpu_campaign(path: Path, *args: str) -> str:
    env = {**os.environ, **FAST, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'scripts'}"}
    argv = [sys.executable, str(ROOT / "scripts" / "gpu-campaign.py"), str(path), *args]
    argv += ["--engine-command", f"vllm={sys.executable} {FAKE_VLLM}"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_gpu_campaign_plans_boots_one_cell_a_call_and_resumes(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    path = fake.write(grid={"max_num_batched_tokens": [2048, 4096]}, concurrencies=[1])
    assert "dry run: 2 boots" in gpu_campaign(path, "--dry-run")
    said = gpu_campaign(path, "--cells", "1")
    assert "1 cell(s) booted this call" in said and campaign_status(path).done == 1
    said = gpu_campaign(path, "--stop-after", "100", "--cell-seconds", "200")
    assert "under 200 s left for a cell" in said and campaign_status(path).done == 1
    gpu_campaign(path, "--cells", "1")
    assert campaign_status(path).green == 2
    assert wait_until_gone(tmp_path) == []


def test_the_traffic_plans_dry_run_as_gpu_traffic_h200_sh_lays_them_out(tmp_path: Path) -> None:
    """rate-h200.yml and trace-h200.yml, staged as scripts/gpu-traffic-h200.sh stages them (MODELS replaced, the
    example trace copied to traces/ beside campaigns/), plan through gpu-campaign.py --dry-run: the rates and the
    boundary by rate, the trace's first 40 s at each speedup, a bench command each."""
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "traces").mkdir()
    shutil.copy(ROOT / "src" / "redline" / "data" / "traces" / "chat-sample.jsonl", tmp_path / "traces")
    write_tiny_llama(tmp_path / "models" / "llama8b", max_position_embeddings=8192)
    plans = {}
    for name in ("rate-h200", "trace-h200"):
        text = (ROOT / "scripts" / "gpu-plans" / f"{name}.yml").read_text().replace("MODELS", str(tmp_path / "models"))
        (tmp_path / "campaigns" / f"{name}.yml").write_text(text)
        said = gpu_campaign(tmp_path / "campaigns" / f"{name}.yml", "--dry-run")
        assert "planned 2 boots at most; none started" in said, said
        plans[name] = json.loads(said[said.index("{\n") : said.index("\n}\n") + 2])["plan"]
    rate = plans["rate-h200"]
    assert "probes its load boundary" in rate["gates"][0] and "from request rate 8 req/s" in rate["gates"][0]
    for cell in rate["cells"]:
        asked = [b["command"][b["command"].index("--request-rate") + 1] for b in cell["benches"]]
        assert asked == ["8", "16", "32"], asked
    trace = parse_trace((tmp_path / "traces" / "chat-sample.jsonl").read_text(), "the example").rows
    rows = sum(1 for r in trace if float(r.arrival_s or 0) - float(trace[0].arrival_s or 0) <= 40)
    for cell in plans["trace-h200"]["cells"]:
        commands = [b["command"] for b in cell["benches"]]
        assert [b["result_file"] for b in cell["benches"]] == ["bench-x1.json", "bench-x8.json", "bench-x32.json"]
        assert all(c[c.index("--dataset-name") + 1] == "timed_trace" for c in commands)
        assert all(c[c.index("--num-prompts") + 1] == str(rows) for c in commands), rows


def test_a_landscape_brought_back_from_the_device_imports_as_its_fixture_writes_it(tmp_path: Path) -> None:
    """gpu-landscape.sh restores a run from its fixture with the device's paths; gpu-land-import.sh brings the run
    back with the fixture's: the round trip gives the fixture back, byte for byte, without the runs' scratch."""
    fixture = ROOT / "tests" / "data" / "vllm-0.26.0-h100-landscape-8b"
    run = tmp_path / "run"
    shutil.copytree(fixture / "landscape-8b", run / "landscape-8b")
    shutil.copy(fixture / "gpu.csv", run / "gpu.csv")
    (run / "landscape-8b" / "work" / "runs").mkdir(parents=True)
    (run / "landscape-8b" / "work" / "runs" / "scratch.log").write_text("not a fixture's\n")
    device_root = "/root/a-repo.copy+1"
    for f in run.rglob("*"):
        if f.is_file():
            data = f.read_bytes().replace(b"/models/", f"{device_root}/.gpu/models/".encode())
            f.write_bytes(data.replace(b"/tmp/redline/", b"/tmp/redline-land/"))
    assert device_root in (run / "landscape-8b" / "campaign.yml").read_text()
    subprocess.run(["tar", "-C", str(run), "-czf", str(tmp_path / "land.tgz"), "."], check=True)
    into = tmp_path / "fixture"
    script = ROOT / "scripts" / "gpu-land-import.sh"
    done = subprocess.run(
        ["bash", str(script), str(tmp_path / "land.tgz"), str(into), "landscape-8b"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    ours = {p.relative_to(fixture / "landscape-8b") for p in (fixture / "landscape-8b").rglob("*") if p.is_file()}
    back = {p.relative_to(into / "landscape-8b") for p in (into / "landscape-8b").rglob("*") if p.is_file()}
    assert back == ours
    assert all((into / "landscape-8b" / p).read_bytes() == (fixture / "landscape-8b" / p).read_bytes() for p in ours)
    assert (into / "gpu.csv").read_bytes() == (fixture / "gpu.csv").read_bytes()
    missing = subprocess.run(
        ["bash", str(script), str(tmp_path / "land.tgz"), str(into), "no-such-plan"], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "has no no-such-plan/campaign.yml" in missing.stderr


@pytest.mark.parametrize("script", sorted((ROOT / "scripts").glob("gpu-*.sh")), ids=lambda p: p.name)
def test_every_gpu_shell_script_parses(script: Path) -> None:
    """A syntax error in a device script fails here, not in a device call that costs GPU time."""
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
