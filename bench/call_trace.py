"""How wide one MCP call is: the redline modules it runs code in, and the redline function calls it makes.

    .venv/bin/python bench/call_trace.py [--json]

Drives the real MCP server in this process (mcp.Client over build_server, as an agent's calls reach it) against
the fake engine (tests/server/fake_vllm.py, real child processes on this host) and traces two calls:

- campaign_run of a one-cell campaign (one boot: two concurrencies and a warm-up, no replicate), waited on until its
  job ends;
- rung_run of a new ladder's floor rung, waited on likewise.

Every module is imported before the trace starts, so what is counted is the call's own work: a Python function
call (sys.setprofile's 'call' event) whose code is in src/redline, on the event loop's thread, on every thread
started while it runs, and in anyio's pooled worker threads (`anyio.to_thread.run_sync`: they may have started
before the trace, which threading.setprofile does not reach, so each function sent there is traced where it
runs). Each call is traced twice: cold, the first of its kind in the server process (what a one-shot CLI run pays:
the calibration corpus parsed once), and warm, the same call again on another campaign or ladder in the same
server (what a long-lived MCP server pays for every call after its first). The figures are deterministic up to the
fake engine's timing (a health poll more or less); docs/architecture.md's walk states them.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import anyio.to_thread  # noqa: E402
from mcp import Client  # noqa: E402

from redline.ops.ladder.rung import stop_ladder_server  # noqa: E402
from redline.server.app import build_server  # noqa: E402
from tests.server.helpers import LLAMA8B, Env, call, new_ladder, write_env  # noqa: E402

SRC = str(ROOT / "src" / "redline") + "/"
# A folder walked: a pathlib walk (a Python call) or an os one (a C call), each counted where redline's code asks it.
PATH_WALKS = {"glob", "rglob", "iterdir"}
PATHLIB = pathlib.__file__
OS_WALKS = {os.scandir, os.listdir}


class Trace:
    """Counts calls into redline's own code, per module (its path under src/redline)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.walks: Counter[str] = Counter()  # a folder walked, by the redline function that walked it

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(SRC):
            self.calls[name[len(SRC) :]] += 1
        elif event == "call" and name == PATHLIB and frame.f_code.co_name in PATH_WALKS:
            self._walked(frame.f_back, frame.f_code.co_name)
        elif event == "c_call" and name.startswith(SRC) and arg in OS_WALKS:
            self._walked(frame, arg.__name__)

    def _walked(self, caller: FrameType | None, how: str) -> None:
        if caller is not None and (name := caller.f_code.co_filename).startswith(SRC):
            self.walks[f"{name[len(SRC) :]} {caller.f_code.co_name} ({how})"] += 1

    def in_thread(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """func, traced in the worker thread that runs it (a pooled thread may predate threading.setprofile)."""

        def traced(*args: Any) -> Any:
            sys.setprofile(self.profile)  # type: ignore[arg-type]
            try:
                return func(*args)
            finally:
                sys.setprofile(None)

        return traced

    @contextmanager
    def on(self) -> Iterator[Trace]:
        pooled = anyio.to_thread.run_sync

        async def run_sync(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return await pooled(self.in_thread(func), *args, **kwargs)

        anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]
        threading.setprofile(self.profile)  # type: ignore[arg-type]
        sys.setprofile(self.profile)  # type: ignore[arg-type]
        try:
            yield self
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
            anyio.to_thread.run_sync = pooled  # type: ignore[assignment]

    def figures(self) -> dict[str, Any]:
        folders = {m.rpartition("/")[0] or "." for m in self.calls}
        return {
            "modules": len(self.calls),
            "folders": len(folders),
            "calls": sum(self.calls.values()),
            "busiest": dict(self.calls.most_common(8)),
            "walks": dict(self.walks),  # every folder walked (glob, iterdir, scandir, listdir), by who walked it
            "module_list": list(self.calls),  # in the order the call first reached each
        }


def _campaign(env: Env, name: str) -> str:
    model = env.workspace / "models" / "llama8b"
    model.mkdir(parents=True, exist_ok=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    spec = {
        "name": name,
        "target": "local",
        "model": str(model),
        "base": {"max_model_len": 4096, "port": env.port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "warmup_requests": 2,
        "replicates": 0,  # one boot: the cell's (a replicate is a second boot of it, and ranks the cells first)
        "cells": [{"name": "only", "max_num_batched_tokens": 2048}],
    }
    path = env.workspace / "campaigns" / f"{name}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec))
    return f"campaigns/{name}.yml"


async def _traced(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    with Trace().on() as trace:
        answer = await call(client, tool, **args)
        while not answer.get("done", True):  # a job still running: wait on it as an agent does
            answer = await call(client, "job_status", job_id=answer["job_id"], wait_s=60)
    if answer.get("state") not in (None, "succeeded"):
        raise SystemExit(f"{tool} did not succeed: {answer.get('message')}")
    return trace.figures()


async def measure() -> dict[str, dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix="redline-trace-"))
    try:
        env = write_env(root / "srv")
        ack = {"i_understand_this_submits_jobs": True, "wait_s": 120}
        ladders = [f"ladders/l8b-{k}.yml" for k in ("cold", "warm")]
        async with Client(build_server(env.config)) as client:
            figures: dict[str, dict[str, Any]] = {}
            try:
                for when, ladder in zip(("cold", "warm"), ladders, strict=True):
                    campaign = {"campaign": _campaign(env, f"trace-{when}"), **ack}
                    figures[f"campaign_run, {when}"] = await _traced(client, "campaign_run", campaign)
                    await new_ladder(client, env, ladder)
                    rung = {"ladder": ladder, "target": "local", **ack}
                    figures[f"rung_run, {when}"] = await _traced(client, "rung_run", rung)
                    await _stop(env, ladder)  # the rung's server is left up for its smoke test: stopped here
            finally:
                for ladder in ladders:
                    await _stop(env, ladder)
            return figures
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _stop(env: Env, ladder: str) -> None:
    if (env.workspace / ladder).exists():
        async with env.config.open_target("local") as target:
            await stop_ladder_server(env.workspace / ladder, target)


WALK = "campaign_run, warm"


def walk(figures: dict[str, dict[str, Any]]) -> str:
    """The walk docs/architecture.md states: the modules a warm campaign_run of one cell runs code in, in the order
    it first reaches each, with the figures of each traced call (tests/test_walk.py holds the doc to this)."""
    warm, cold, rung = figures[WALK], figures["campaign_run, cold"], figures["rung_run, warm"]
    lines = [
        f"A warm campaign_run of one cell (one boot: two concurrencies and a warm-up, against the fake engine; the "
        f"server's worker threads traced too) runs code in "
        f"{warm['modules']} modules in {warm['folders']} folders and makes about {round(warm['calls'], -3):,} redline "
        f"calls; the first in a process, cold, {cold['modules']} modules and about {round(cold['calls'], -3):,} calls "
        f"(the calibration corpus is parsed then, once); a rung_run, {rung['modules']} modules and about "
        f"{round(rung['calls'], -2):,} calls. In the order the call first reaches each:",
        "",
    ]
    return "\n".join([*lines, *(f"{i}. `{m}`" for i, m in enumerate(warm["module_list"], 1))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="every figure and module, as JSON")
    parser.add_argument("--modules", action="store_true", help="list the modules each call runs code in")
    parser.add_argument("--walk", action="store_true", help="docs/architecture.md's walk, as this trace gives it")
    args = parser.parse_args()
    figures = anyio.run(measure)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    if args.walk:
        print(walk(figures))
        return
    for name, f in figures.items():
        print(f"{name:<24} {f['modules']:>3} modules in {f['folders']:>2} folders, {f['calls']:>7,} redline calls")
        print("    busiest: " + ", ".join(f"{m} {n:,}" for m, n in f["busiest"].items()))
        print("    folders walked: " + (", ".join(f"{w} x{n}" for w, n in f["walks"].items()) or "none"))
        if args.modules:
            print("    " + "\n    ".join(f["module_list"]))


if __name__ == "__main__":
    main()
