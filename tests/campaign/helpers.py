"""Campaigns on the fake engine (tests/server/fake_vllm.py) through the real LocalTarget.

The model folder is copied under the test's tmp_path, so every process a campaign
starts names tmp_path on its command line (what `processes_naming` looks for).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redline.ledger.campaign_file import cells_of
from redline.models import BootSignals, BootStatus, ServeConfig
from redline.models.campaign import Campaign
from redline.models.campaign_results import BootRecord, CellVerdict, Commands, ConcurrencyResult, Stat
from redline.models.context import (
    BenchIdentity,
    ContextDescriptor,
    EngineIdentity,
    Hardware,
    ModelIdentity,
    Parallelism,
    RegimeLabel,
    Workload,
)
from redline.targets import LocalTarget
from tests.conftest import processes_naming
from tests.server.helpers import FAKE_SGLANG, FAKE_VLLM, LLAMA8B, free_port

FAST = {"FAKE_VLLM_KV_TOKENS": "100000", "FAKE_VLLM_BOOT_S": "0.1"}


@dataclass
class Fake:
    """A workspace with a model, a campaign folder and the fake engine's settings."""

    root: Path
    port: int
    engine_env: dict[str, str]

    @property
    def model(self) -> Path:
        return self.root / "models" / "llama8b"

    @property
    def campaigns(self) -> Path:
        return self.root / "campaigns"

    def target(self, dev_mode: bool | None = None, **engine_env: str) -> LocalTarget:
        return LocalTarget(
            "local",
            workdir=str(self.root / "target"),
            engine_command=[sys.executable, str(FAKE_VLLM)],
            engine_env={**self.engine_env, **engine_env},
            dev_mode=dev_mode,
        )

    def two_engine_target(self, **engine_env: str) -> LocalTarget:
        """A target that runs both engines: the fake vLLM (server and the one bench client) and the fake SGLang."""
        return LocalTarget(
            "local",
            workdir=str(self.root / "target"),
            engine_commands={
                "vllm": [sys.executable, str(FAKE_VLLM)],
                "sglang": [sys.executable, str(FAKE_SGLANG), "serve"],  # `sglang serve`: `sglang version` answers
            },
            engine_env={**self.engine_env, **engine_env},
        )

    def targets_file(self) -> Path:
        path = self.root / "targets.yml"
        spec = {
            "kind": "local",
            "workdir": str(self.root / "target"),
            "engine_command": [sys.executable, str(FAKE_VLLM)],
            "env": self.engine_env,
        }
        path.write_text(json.dumps({"targets": {"local": spec}}))
        return path

    def spec(self, **changes: Any) -> dict[str, Any]:
        """A small campaign: two values of max_num_batched_tokens at concurrencies 1 and 4."""
        base = {"max_model_len": 4096, "port": self.port}
        spec = {
            "name": "c1",
            "target": "local",
            "model": str(self.model),
            "base": base,
            "workload": {"input_len": 128, "output_len": 16},
            "concurrencies": [1, 4],
            "warmup_requests": 2,
            "grid": {"max_num_batched_tokens": [2048, 8192]},
        }
        spec.update(changes)
        return spec

    def write(self, name: str = "c1", text: str | None = None, **changes: Any) -> Path:
        """campaigns/<name>.yml from spec(**changes), or the text given."""
        path = self.campaigns / f"{name}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else json.dumps(self.spec(**changes), indent=1))
        return path


def make_fake(root: Path, **engine_env: str) -> Fake:
    model = root / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    return Fake(root, free_port(), {**FAST, **engine_env})


def wait_until_gone(root: Path, timeout_s: float = 20) -> list[str]:
    """Processes naming root once they had timeout_s to end (a bench client of a killed runner may linger)."""
    deadline = time.monotonic() + timeout_s
    while (left := processes_naming(root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


# ---- verdicts built by hand, for the pure champion and table tests ---------------------------------------------------


def campaign(**changes: Any) -> Campaign:
    spec = {
        "name": "c",
        "target": "local",
        "model": "m",
        "base": {"max_model_len": 4096},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 8],
        "grid": {"max_num_batched_tokens": [2048, 8192]},
    }
    spec.update(changes)
    return Campaign.model_validate(spec)


def verdict(
    cell: str,
    figures: dict[int, float | list[float]],
    *,
    metric: str = "output_throughput_per_gpu",
    extra: dict[str, dict[int, float]] | None = None,
    verdict: str = "green",
    graphs: str = "graphs",
    cache: str = "warm",
    reason: str = "ok",
    sla_ok: dict[int, bool] | None = None,
    engine: str = "vllm",
    version: str | None = "0.26.0",
    backend: str = "vllm",
) -> CellVerdict:
    """A verdict whose metric at each concurrency is `figures[c]` (a list: one value per trial), booted by `engine`
    (benched by vLLM's client under `backend`)."""
    results = []
    for c, value in figures.items():
        values = value if isinstance(value, list) else [value]
        metrics = {metric: _stat(values)}
        for name, per_c in (extra or {}).items():
            metrics[name] = _stat([per_c[c]])
        results.append(
            ConcurrencyResult(
                concurrency=c, num_prompts=4 * c, ok=True, metrics=metrics, sla_ok=(sla_ok or {}).get(c, True)
            )
        )
    serve = ServeConfig(model="m", max_model_len=4096, enforce_eager=graphs == "eager")
    signals = BootSignals(status=BootStatus.BOOT_OK, reason="ready")
    now = datetime.now(UTC)
    return CellVerdict(
        campaign="c",
        cell=cell,
        index=1,
        baseline=False,
        levers={},
        verdict=verdict,
        reason=reason,
        boot=BootRecord(status=BootStatus.BOOT_OK, reason="ready", boot_s=1.0, log_file="boot.log", signals=signals),
        results=results,
        commands=Commands(boot=["serve"]),
        context=ContextDescriptor(
            provenance="measured",
            model=ModelIdentity(name="m"),
            hardware=Hardware(),
            parallelism=Parallelism(),
            serve=serve,
            workload=Workload(input_len=128, output_len=16),
            regime=RegimeLabel(cache=cache, graphs=graphs),
            engine=EngineIdentity(name=engine, version=version),
            bench=BenchIdentity(client="vllm", backend=backend, version=version if engine == "vllm" else None),
            trials=len(values),
            warmup_requests=8,
        ),
        started_at=now,
        ended_at=now,
        wall_s=1.0,
    )


def _stat(values: list[float]) -> Stat:
    import statistics

    return Stat(
        mean=statistics.fmean(values),
        std=statistics.stdev(values) if len(values) > 1 else None,
        n=len(values),
        values=values,
    )


def write_verdict(results: Path, v: CellVerdict) -> Path:
    """Plant a cell's verdict in a results folder, as a run writes it (last, through the one layout)."""
    return cells_of(results).write_record(v.cell, v)
