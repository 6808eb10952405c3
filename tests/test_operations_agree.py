"""Every operation takes the same things as an MCP tool, as a CLI command and as a tool function: its request
model's fields. A field added to a request model and not exposed everywhere fails here.

What each surface takes beyond the request, or instead of a field, is declared below with the reason;
everything else must come from the model. And what each entry does: the experiment tools, their CLI commands and
their functions each open the same experiment (ops/experiment/prepare.py open_experiment), with the same target,
widening and known-good choice.
"""

from __future__ import annotations

import argparse
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from redline.cli import build_parser, main
from redline.cli.flags import flag
from redline.engines import get_engine
from redline.errors import InputError
from redline.models.ab import AbSpec
from redline.models.ladder import Ladder
from redline.ops.ab import apply as apply_ops
from redline.ops.ab import run as ab_ops
from redline.ops.campaign import plan as campaign_plan_ops
from redline.ops.campaign import report as report_ops
from redline.ops.campaign import results as campaign_results
from redline.ops.campaign import run as campaign_run_ops
from redline.ops.evidence import baseline as baseline_ops
from redline.ops.evidence import frontier as frontier_ops
from redline.ops.evidence import known_good as known_good_ops
from redline.ops.experiment import prepare
from redline.ops.ladder import adopt as adopt_ops
from redline.ops.ladder import plan as ladder_ops
from redline.ops.ladder import rung as rung_ops
from redline.ops.predict import predict as predict_ops
from redline.ops.request_base import Request
from redline.ops.requests import OPERATIONS, ChampionSelectRequest, LadderInitRequest, RungRunRequest
from redline.server.app import build_server
from redline.server.config import ServerConfig
from redline.server.jobs import Jobs
from redline.server.toolkit import READ_ONLY, TOOL_TABLE, tool
from tests.server.helpers import LLAMA8B, text_of, write_env

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Surfaces:
    """How one operation is exposed, and every way a surface differs from its request model."""

    mcp_extra: frozenset[str] = frozenset()  # MCP parameters that are not request fields
    cli: tuple[str, ...] | None = None  # the CLI command; None: MCP only, for the reason in `why`
    cli_extra: frozenset[str] = frozenset()  # CLI flags that are not request fields
    cli_instead: frozenset[str] = frozenset()  # fields the CLI takes another way (a positional PATH)
    cli_defaults: dict[str, Any] = field(default_factory=dict)  # the CLI's own default for a field
    functions: tuple[Callable[..., Any], ...] = ()  # the redline functions the operation calls
    resolved: frozenset[str] = frozenset()  # fields the server turns into a function's argument itself
    why: str = ""


LADDER = frozenset({"ladder"})
AT_TERMINAL = frozenset({"--ladder"})
WIDEN = frozenset({"--config"})  # the server config whose `widen:` applies: a person's file, never an agent's argument
SURFACES = {
    "ladder_init": Surfaces(LADDER, ("ladder", "init"), AT_TERMINAL | WIDEN, functions=(ladder_ops.ladder_init,)),
    "ladder_status": Surfaces(
        LADDER, ("ladder", "status"), AT_TERMINAL | {"--json"}, functions=(ladder_ops.ladder_status,)
    ),
    "ladder_next_rung": Surfaces(
        LADDER, ("ladder", "next"), AT_TERMINAL | {"--json"}, functions=(ladder_ops.ladder_next,)
    ),
    "rung_run": Surfaces(
        LADDER | {"wait_s"},
        ("ladder", "run"),
        AT_TERMINAL | WIDEN | {"--targets"},
        cli_defaults={"target": "local"},
        functions=(rung_ops.rung_run,),
    ),
    "smoke_test": Surfaces(
        LADDER | {"wait_s"},
        ("ladder", "smoke"),
        AT_TERMINAL | {"--targets"},
        cli_defaults={"target": "local"},
        functions=(rung_ops.smoke_test,),
    ),
    "rung_record": Surfaces(
        LADDER,
        functions=(ladder_ops.record_boot, ladder_ops.record_smoke),
        resolved=frozenset({"log_file", "bench_file", "model_config_file"}),
        why="`redline ladder record` reads local files (--log, --smoke, --model-config-file), not text or workspace "
        "paths; the config.json it gives is the model's shape (record_boot's `shape`)",
    ),
    "ceiling_record": Surfaces(
        LADDER,
        ("ladder", "record"),
        AT_TERMINAL
        | {
            "--log",
            "--smoke",
            "--ceiling",
            "--started-at",
            "--ended-at",
            "--boot-s",
            "--server-healthy-after",
            "--model-config-file",
            "--json",
        },
        functions=(rung_ops.stop_and_record_ceiling,),
    ),
    "ladder_adopt": Surfaces(
        cli=("ladder", "adopt"),
        cli_extra=frozenset({"--workspace", "--json"}),
        cli_instead=frozenset({"source"}),
        functions=(adopt_ops.ladder_adopt,),
        why="the source is SRC at a terminal, any path the person names; over MCP the server checks where it is",
    ),
    "parse_boot_log": Surfaces(
        cli=("parse-log",),
        cli_extra=frozenset({"--json"}),
        cli_instead=frozenset({"text"}),
        functions=(get_engine().parse_boot_log,),
        resolved=frozenset({"engine"}),
        why="the engine field picks the Engine (get_engine) whose reader takes the text",
    ),
    "job_status": Surfaces(functions=(Jobs.wait,), why="jobs live inside one running server"),
    "job_cancel": Surfaces(functions=(Jobs.cancel,), why="jobs live inside one running server"),
    "job_list": Surfaces(functions=(Jobs.list,), why="jobs live inside one running server"),
}
# A campaign file is named beside its request (a workspace path over MCP, --campaign at a terminal); plan and run
# open their target by name themselves (open_campaign_target), from the server's targets file or --targets, and
# take the server config's widening (--config at a terminal; never a request field: an agent cannot widen).
CAMPAIGN = frozenset({"campaign"})
AT_A_TERMINAL = frozenset({"--campaign", "--json"})
OPENS_TARGET = frozenset({"target"})
SURFACES |= {
    "campaign_init": Surfaces(
        CAMPAIGN, ("campaign", "init"), frozenset({"--campaign"}), functions=(campaign_plan_ops.campaign_init,)
    ),
    "campaign_plan": Surfaces(
        CAMPAIGN,
        ("campaign", "plan"),
        AT_A_TERMINAL | {"--targets", "--config"},
        functions=(campaign_plan_ops.campaign_plan, campaign_plan_ops.open_campaign_target),
        resolved=OPENS_TARGET,
    ),
    "campaign_run": Surfaces(
        CAMPAIGN | {"wait_s"},
        ("campaign", "run"),
        AT_A_TERMINAL | {"--targets", "--config"},
        functions=(campaign_run_ops.campaign_run, campaign_plan_ops.open_campaign_target),
        resolved=OPENS_TARGET,
    ),
    "campaign_status": Surfaces(
        CAMPAIGN, ("campaign", "status"), AT_A_TERMINAL, functions=(campaign_results.campaign_status,)
    ),
    "campaign_aggregate": Surfaces(
        CAMPAIGN, ("campaign", "aggregate"), AT_A_TERMINAL, functions=(campaign_results.campaign_aggregate,)
    ),
    "champion_select": Surfaces(
        CAMPAIGN, ("campaign", "champion"), AT_A_TERMINAL, functions=(campaign_results.champion_select,)
    ),
    "campaign_report": Surfaces(
        CAMPAIGN, ("campaign", "report"), AT_A_TERMINAL, functions=(report_ops.campaign_report,)
    ),
}

# The verdict tools name files inside the server's workspace (--workspace at a terminal); ab_run takes its
# spec as a file at a terminal (--spec-file) and opens its target by the spec's name (--targets at a terminal).
IN_WORKSPACE = frozenset({"--workspace", "--json"})
SURFACES |= {
    "ab_run": Surfaces(
        frozenset({"wait_s"}),
        ("ab", "run"),
        IN_WORKSPACE | {"--spec-file", "--targets", "--config"},
        cli_instead=frozenset({"spec"}),
        functions=(ab_ops.ab_run,),
    ),
    "perf_baseline_record": Surfaces(
        cli=("baseline", "record"), cli_extra=IN_WORKSPACE, functions=(baseline_ops.perf_baseline_record,)
    ),
    "perf_baseline_diff": Surfaces(
        cli=("baseline", "diff"), cli_extra=IN_WORKSPACE, functions=(baseline_ops.perf_baseline_diff,)
    ),
    "champion_apply": Surfaces(cli=("ab", "apply"), cli_extra=IN_WORKSPACE, functions=(apply_ops.champion_apply,)),
    "lever_frontier": Surfaces(cli=("frontier",), cli_extra=IN_WORKSPACE, functions=(frontier_ops.lever_frontier,)),
    "known_good_record": Surfaces(
        cli=("known-good", "record"), cli_extra=IN_WORKSPACE, functions=(known_good_ops.known_good_record,)
    ),
    "known_good_lookup": Surfaces(
        cli=("known-good", "lookup"), cli_extra=IN_WORKSPACE, functions=(known_good_ops.known_good_lookup,)
    ),
    "known_good_list": Surfaces(
        cli=("known-good", "list"), cli_extra=IN_WORKSPACE, functions=(known_good_ops.known_good_list,)
    ),
    "memory_predict": Surfaces(
        cli=("predict",),
        cli_extra=frozenset({"--workspace", "--json"}),
        functions=(predict_ops.memory_predict,),
    ),
    "known_good_config": Surfaces(
        functions=(known_good_ops.known_good_config,),
        why="the design card's one registry tool; at a terminal its verbs are `redline known-good record|lookup|list`",
    ),
}


@pytest.fixture
async def tools(tmp_path: Path) -> dict[str, Any]:
    async with Client(build_server(ServerConfig(workspace=tmp_path))) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


def _command(*path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.option_strings[-1]: a for a in parser._actions if a.option_strings and a.dest != "help"}


def _check_mcp(name: str, request: type[Request], surfaces: Surfaces, tool: Any) -> None:
    schema, model = tool.input_schema, request.model_json_schema()
    assert set(schema["properties"]) == set(request.model_fields) | surfaces.mcp_extra, name
    for field_name in request.model_fields:  # the same type, constraints, default and description
        assert schema["properties"][field_name] == model["properties"][field_name], (name, field_name)
    assert schema.get("$defs", {}) == model.get("$defs", {}), name
    required = {f for f, info in request.model_fields.items() if info.is_required()}
    assert set(schema.get("required", [])) - surfaces.mcp_extra == required, name


def _check_cli(name: str, request: type[Request], surfaces: Surfaces) -> None:
    assert surfaces.cli is not None
    flags = _flags(_command(*surfaces.cli))
    from_model = {flag(f): f for f in request.model_fields if f not in surfaces.cli_instead}
    assert set(flags) == set(from_model) | surfaces.cli_extra, name
    for option, field_name in from_model.items():
        info, action = request.model_fields[field_name], flags[option]
        default = surfaces.cli_defaults.get(field_name, None if info.is_required() else info.default)
        assert action.dest == field_name and action.default == default, (name, option)
        assert action.required == (info.is_required() and field_name not in surfaces.cli_defaults), (name, option)
        assert (action.help or "").startswith(info.description or ""), (name, option)


def _check_functions(name: str, request: type[Request], surfaces: Surfaces) -> None:
    taken: set[str] = set()
    for fn in surfaces.functions:
        params = inspect.signature(fn, eval_str=True).parameters
        if any(request in (p.annotation, *typing.get_args(p.annotation)) for p in params.values()):
            taken |= set(request.model_fields)  # takes the whole request (or `request | None`)
        taken |= set(params)
    missing = set(request.model_fields) - taken - surfaces.resolved
    assert not missing, f"{name}: no function takes {missing}"


async def test_mcp_cli_and_tool_agree_on_every_operation(tools: dict[str, Any]) -> None:
    assert set(OPERATIONS) == set(SURFACES) == set(tools)
    for name, request in OPERATIONS.items():
        surfaces = SURFACES[name]
        _check_mcp(name, request, surfaces, tools[name])
        if surfaces.cli is not None:
            _check_cli(name, request, surfaces)
        else:
            assert surfaces.why, f"{name} has no CLI command: say why"
        _check_functions(name, request, surfaces)


def test_a_tool_is_named_by_the_operations_table_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """@tool names a tool as OPERATIONS names its request (the functions are named apart from the ops functions they
    call); a request the table lacks, or names twice, is no tool."""
    assert [(e.name, e.request) for e in TOOL_TABLE] == [(n, OPERATIONS[n]) for n in (e.name for e in TOOL_TABLE)]
    assert all(e.fn.__name__ == e.name for e in TOOL_TABLE)  # the input schema's title: <tool>Arguments, as before
    with pytest.raises(TypeError, match=r"WiderInit exactly once .* names it \[\]"):
        tool(READ_ONLY, "Not a tool", WiderInit)
    monkeypatch.setitem(OPERATIONS, "ladder_init_again", LadderInitRequest)
    with pytest.raises(TypeError, match=r"LadderInitRequest exactly once .*'ladder_init', 'ladder_init_again'"):
        tool(READ_ONLY, "Twice", LadderInitRequest)


class WiderInit(LadderInitRequest):
    colour: str = "red"


class WiderRun(RungRunRequest):
    colour: str = "red"


class WiderChampion(ChampionSelectRequest):
    colour: str = "red"


async def test_a_field_missing_from_a_surface_is_caught(tools: dict[str, Any]) -> None:
    """The checks themselves: a request with a field that no MCP parameter, CLI flag or function takes fails them."""
    with pytest.raises(AssertionError):
        _check_mcp("ladder_init", WiderInit, SURFACES["ladder_init"], tools["ladder_init"])
    with pytest.raises(AssertionError):
        _check_cli("ladder_init", WiderInit, SURFACES["ladder_init"])
    with pytest.raises(AssertionError, match="colour"):
        _check_functions("rung_run", WiderRun, SURFACES["rung_run"])
    with pytest.raises(AssertionError):  # a campaign tool, whose CLI command has a flag per field too
        _check_cli("champion_select", WiderChampion, SURFACES["champion_select"])
    with pytest.raises(AssertionError, match="colour"):  # `request: ChampionSelectRequest | None` takes only its own
        _check_functions("champion_select", WiderChampion, SURFACES["champion_select"])


# Where each ladder_init field lands in the ladder it writes: a new field fails until it is placed here.
LANDS = {
    "model": lambda lad: lad.model.key,
    "model_path": lambda lad: lad.model.path,
    "floor_max_model_len": lambda lad: lad.floor.max_model_len,
    "floor_max_num_batched_tokens": lambda lad: lad.floor.max_num_batched_tokens,
    "gpu_memory_utilization": lambda lad: lad.fixed.gpu_memory_utilization,
    "min_concurrency": lambda lad: lad.min_concurrency,
    "policy": lambda lad: lad.policy,
    "gpu_name": lambda lad: lad.gpu.name,
    "gpu_memory_gib": lambda lad: lad.gpu.memory_gib,
    "gpu_count": lambda lad: lad.gpu.count,
    "engine": lambda lad: lad.engine,
    "engine_version": lambda lad: lad.engine_version,
    "kv_block_size": lambda lad: lad.kv_block_size,
    "max_position_embeddings": lambda lad: lad.model.max_position_embeddings,
    "allow_long_context": lambda lad: lad.allow_long_context,
    "max_num_batched_tokens_cap": lambda lad: lad.max_num_batched_tokens_cap,
    "target_max_num_batched_tokens": lambda lad: lad.target_max_num_batched_tokens,
    "deployment_compile_cache": lambda lad: lad.deployment_compile_cache,
    "fixed": lambda lad: {"port": lad.fixed.port},
    "boot_deadline_s": lambda lad: lad.boot_deadline_s,
    "smoke_deadline_s": lambda lad: lad.smoke_deadline_s,
    "skip_known_good": lambda lad: "turned off by the request" in lad.known_good.note,
}
SHAPED = "model_config_file"  # the config.json given lands as the model's shape (read by the edge, as text)


def test_every_ladder_init_field_reaches_the_ladder(tmp_path: Path) -> None:
    given = dict(
        model="m8b",
        model_path="/models/m8b",
        floor_max_model_len=4096,
        floor_max_num_batched_tokens=2048,
        gpu_memory_utilization=0.8,
        min_concurrency=2,
        policy="doubling",
        gpu_name="GPU X",
        gpu_memory_gib=80.0,
        gpu_count=2,
        engine="vllm",
        engine_version="9.9.9",
        kv_block_size=32,
        max_position_embeddings=8192,
        allow_long_context=True,
        max_num_batched_tokens_cap=16384,
        target_max_num_batched_tokens=4096,
        deployment_compile_cache="warm",
        fixed={"port": 8123},
        boot_deadline_s=60.0,
        smoke_deadline_s=90.0,
        skip_known_good=True,
        model_config_file="config.json",
    )
    assert set(given) == {*LANDS, SHAPED} == set(LadderInitRequest.model_fields)
    config = (Path(__file__).parent / "data" / "vllm-0.26.0-h200" / "models" / "llama8b" / "config.json").read_text()
    written: Ladder = ladder_ops.ladder_init(tmp_path / "l.yml", LadderInitRequest(**given), config_text=config)
    assert written.model.shape is not None and written.model.shape.hidden == 4096
    for name, read in LANDS.items():
        assert read(written) == given[name], name
    assert ladder_ops.ladder_status(tmp_path / "l.yml").ladder == written  # and it is what the file holds


# ---- what each entry does: the MCP tool, the CLI command and the function open the same experiment --------------

SLEEP_MODE = "--enable-sleep-mode"  # a real vLLM option only a widening admits


class Opened(InputError):
    """Raised where the experiment is opened, with what it was opened with: no entry goes further."""


def _opened(kind: Any, target: Any, *, dry_run: bool, opening: Any, progress: Any = None) -> Any:
    said = {
        "kind": type(kind).__name__,
        "spec": kind.spec.model_dump(mode="json"),
        "workspace": str(kind.workspace.resolve()),
        "target": target.name,
        "dry_run": dry_run,
        "skip_known_good": opening.skip_known_good,
        "widening": {e: w.model_dump(mode="json") for e, w in (opening.widening or {}).items()},
    }
    raise Opened(json.dumps(said, sort_keys=True))


def _said(message: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(message[message.index("{") : message.rindex("}") + 1])
    return found


async def test_each_entry_opens_the_same_experiment_with_the_same_widening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """campaign_run and ab_run, each as an MCP tool, a CLI command (`--config` for both) and a function, reach the
    one open_experiment with the same experiment, target, widening and known-good choice."""
    env = write_env(tmp_path / "srv", widen={"vllm": {"flags": [SLEEP_MODE]}})
    campaign = env.workspace / "campaigns" / "c1.yml"
    campaign.parent.mkdir(parents=True)
    serve = {"model": str(LLAMA8B), "max_model_len": 4096}
    c = {"name": "c1", "target": "local", "model": str(LLAMA8B), "base": {"max_model_len": 4096}, "concurrencies": [1]}
    campaign.write_text(json.dumps(c | {"workload": {"input_len": 8, "output_len": 8}, "cells": [{"name": "a"}]}))
    ab = {"name": "ab1", "target": "local", "concurrencies": [1], "workload": {"input_len": 8, "output_len": 8}}
    ab |= {"arms": [{"name": "a", "serve": serve}, {"name": "b", "serve": serve | {"extra_flags": [SLEEP_MODE]}}]}
    (tmp_path / "ab1.json").write_text(json.dumps(ab))
    monkeypatch.setattr(prepare, "open_experiment", _opened)
    entries: dict[str, list[dict[str, Any]]] = {"campaign_run": [], "ab_run": []}

    async with Client(build_server(env.config)) as client:
        for tool, args in (("campaign_run", {"campaign": "campaigns/c1.yml"}), ("ab_run", {"spec": ab})):
            answer = await client.call_tool(tool, {**args, "dry_run": True, "skip_known_good": True})
            entries[tool].append(_said(text_of(answer)))

    common = [
        "--dry-run",
        "--skip-known-good",
        "--config",
        str(env.config_path),
        "--targets",
        str(env.root / "targets.yml"),
    ]
    for tool, argv in (
        ("campaign_run", ["campaign", "run", "--campaign", str(campaign)]),
        ("ab_run", ["ab", "run", "--spec-file", str(tmp_path / "ab1.json"), "--workspace", str(env.workspace)]),
    ):
        assert await anyio.to_thread.run_sync(main, [*argv, *common]) == 2  # the CLI runs its own event loop
        entries[tool].append(_said(capsys.readouterr().err))

    async with env.config.open_target("local") as target:
        widening, kw = env.config.widen, {"i_understand_this_submits_jobs": False, "dry_run": True}
        for tool, run in (
            (
                "campaign_run",
                campaign_run_ops.campaign_run(campaign, target, widening=widening, skip_known_good=True, **kw),
            ),
            (
                "ab_run",
                ab_ops.ab_run(
                    env.workspace, AbSpec.model_validate(ab), target, widening=widening, skip_known_good=True, **kw
                ),
            ),
        ):
            with pytest.raises(Opened) as opened:
                await run
            entries[tool].append(_said(str(opened.value)))

    for tool, (mcp, cli, function) in entries.items():
        assert mcp == cli == function, tool
        assert mcp["widening"] == {"vllm": {"flags": [SLEEP_MODE], "env": []}} and mcp["skip_known_good"], tool
