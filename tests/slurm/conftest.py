"""Fixtures for tests against a real Slurm cluster: the one `scripts/slurm-cluster up` starts.

That cluster (Debian's Slurm 22.05, munge, slurmctld and two slurmds each in a network namespace of its own,
two fake GPUs per node, sacct through slurmdbd) writes an env file, `/var/lib/redline-slurm/env` unless
`REDLINE_SLURM_ENV` names another. Without a reachable cluster every test here is skipped, or failed where
`REDLINE_REQUIRE_SLURM=1` (CI sets it). Every test under tests/slurm is marked `slurm`.

Each test gets a target name of its own (`slurm_target_name`): its jobs carry it in their comment, and after
the test any job of that name left behind fails the test (and is cancelled, so the next one starts clean).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from redline.targets.slurm_spec import SlurmSpec
from tests.server.helpers import FAKE_VLLM

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ENV_FILE = Path("/var/lib/redline-slurm/env")
FAST = {"FAKE_VLLM_KV_TOKENS": "100000", "FAKE_VLLM_BOOT_S": "0.2"}


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


@dataclass(frozen=True)
class SlurmCluster:
    """A reachable cluster and what a test needs to drive it."""

    conf: str
    partition: str
    short_partition: str  # one minute at most: a job asking more pends (PartitionTimeLimit)
    nodes: list[str]
    gpus_per_node: int
    work: Path  # shared by the nodes and this host
    accounting: bool

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A Slurm command with the cluster's SLURM_CONF; a failure (check=True) raises with its stderr."""
        env = {**os.environ, "SLURM_CONF": self.conf}
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def jobs(self, target: str | None = None) -> list[dict[str, str]]:
        """Every job squeue shows (of one redline target, when named): id, name, state, comment."""
        out = self.run("squeue", "-h", "-O", "JobId:|,Name:|,State:|,NodeList:|,Comment:|").stdout
        rows = [
            dict(zip(("id", "name", "state", "nodes", "comment"), line.split("|"), strict=False))
            for line in out.splitlines()
        ]
        return [r for r in rows if target is None or f"target={target}," in r.get("comment", "")]

    def sacct(self, *job_ids: str, timeout: float = 30) -> list[dict[str, str]]:
        """sacct's rows (steps too) of these ended jobs: JobID, JobName, State, ExitCode, NodeList, Submit, Start,
        End, Comment. The accounting daemon records a job's end a moment after squeue stops showing it, so this
        waits (`timeout` s at most) until every job's row has its Start and End."""
        fields = ("JobID", "JobName", "State", "ExitCode", "NodeList", "Submit", "Start", "End", "Comment")
        end = time.monotonic() + timeout
        while True:
            out = self.run("sacct", "-P", "-n", f"--jobs={','.join(job_ids)}", f"--format={','.join(fields)}").stdout
            rows = [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines()]
            jobs = {r["JobID"]: r for r in rows if r["JobID"] in job_ids}
            if len(jobs) == len(set(job_ids)) and all("Unknown" not in (r["Start"], r["End"]) for r in jobs.values()):
                return rows
            assert time.monotonic() < end, f"sacct has not recorded the end of jobs {job_ids} after {timeout}s: {rows}"
            time.sleep(0.5)

    def sbatch(self, *options: str, wrap: str = "sleep 600") -> str:
        """A job of the test's own (not redline's): its id."""
        return self.run("sbatch", "--parsable", "--mem=50M", "-o", "/dev/null", *options, "--wrap", wrap).stdout.strip()

    def wait_running(self, job_id: str, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while self.run("squeue", "-h", "-j", job_id, "-o", "%T", check=False).stdout.strip() != "RUNNING":
            assert time.monotonic() < end, f"job {job_id} not RUNNING after {timeout}s"
            time.sleep(0.2)

    def cancel(self, *job_ids: str) -> None:
        """Cancel the test's own jobs and wait until squeue no longer shows them."""
        if job_ids:
            self.run("scancel", *job_ids, check=False)
            end = time.monotonic() + 60
            while {j["id"] for j in self.jobs()} & set(job_ids):
                assert time.monotonic() < end, f"jobs {job_ids} still there 60s after scancel"
                time.sleep(0.2)

    def spec(self, workdir: Path, **changes: Any) -> SlurmSpec:
        """A targets-file entry for the test cluster, running the fake engine, with changes."""
        fields: dict[str, Any] = {
            "kind": "slurm",
            "partition": self.partition,
            "slurm_conf": self.conf,
            "workdir": str(workdir),
            "mem": "300M",
            "job_prefix": "rt",
            "engine_command": [sys.executable, str(FAKE_VLLM)],
            "env": FAST,
        }
        return SlurmSpec(**{**fields, **changes})


def connect() -> SlurmCluster | str:
    """The cluster the env file describes, or why there is none."""
    env_file = Path(os.environ.get("REDLINE_SLURM_ENV") or DEFAULT_ENV_FILE)
    if not env_file.is_file():
        return f"no Slurm cluster: {env_file} is missing (start one with `sudo scripts/slurm-cluster up`)"
    env = read_env_file(env_file)
    cluster = SlurmCluster(
        conf=env["REDLINE_SLURM_CONF"],
        partition=env["REDLINE_SLURM_PARTITION"],
        short_partition=env["REDLINE_SLURM_SHORT_PARTITION"],
        nodes=env["REDLINE_SLURM_NODES"].split(),
        gpus_per_node=int(env["REDLINE_SLURM_GPUS_PER_NODE"]),
        work=Path(env["REDLINE_SLURM_WORK"]),
        accounting=env.get("REDLINE_SLURM_ACCOUNTING") == "1",
    )
    try:
        seen = cluster.run("sinfo", "-h", "-N", "-p", cluster.partition, "-o", "%N %T", check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Slurm cluster from {env_file} unreachable: {exc}"
    up = {line.split()[0] for line in seen.stdout.splitlines() if line.split()[1].rstrip("*") in ("idle", "mixed")}
    if seen.returncode != 0 or up != set(cluster.nodes):
        return f"Slurm cluster from {env_file} is not up (`scripts/slurm-cluster up`): {seen.stdout}{seen.stderr}"
    return cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.slurm)


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    found = connect()
    if isinstance(found, str):
        if os.environ.get("REDLINE_REQUIRE_SLURM") == "1":
            pytest.fail(found + " (REDLINE_REQUIRE_SLURM=1)")
        pytest.skip(found)
    return found


@pytest.fixture
def slurm_target_name(slurm_cluster: SlurmCluster) -> Iterator[str]:
    """A target name no other test uses; after the test no job of it may be left (they are cancelled anyway)."""
    name = "t" + uuid.uuid4().hex[:8]
    yield name
    left = slurm_cluster.jobs(name)
    slurm_cluster.cancel(*[j["id"] for j in left])
    assert left == [], f"the test left jobs of target {name} behind: {left}"
