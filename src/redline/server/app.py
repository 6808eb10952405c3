"""The MCP server: the tools of the tool table (server/toolkit.py TOOL_TABLE), the ladder resources, and jobs
that live as long as it runs.

    server = build_server(load_server_config("redline-server.yml"))
    server.run()                                        # stdio
    async with Client(server) as client: ...            # in-process, in tests

This module only builds the server. What the tools share is in toolkit.py; the tools are in
ladder_tools.py, experiment_tools.py and job_tools.py, the resources in resources.py, the HTTP transport in http.py.
"""

import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool

from redline import __version__
from redline.ledger.derived import derived_dir
from redline.server import (  # importing them registers their tools
    evidence_tools,
    experiment_tools,
    job_tools,
    ladder_tools,
    predict_tools,
)
from redline.server.cache import LadderCache
from redline.server.http import http_app
from redline.server.http_guard import guarded_protocol
from redline.server.jobs import running_jobs
from redline.server.resources import add_resources
from redline.server.toolkit import TOOL_TABLE, State, StrictTool, ToolEntry, stop_server
from redline.server_config import STATE_DIR, ServerConfig

__all__ = ["build_server", "guarded_protocol", "http_app"]

_log = logging.getLogger("redline.server")

INSTRUCTIONS = """\
redline finds the highest safe max_model_len and max_num_batched_tokens for one model on one GPU,
one clean boot per rung, every rung kept in a ladder file inside this server's workspace.
Start with ladder_status (or ladder_init for a new model), then follow `next.route` each time:
run_rung -> rung_run, smoke_test -> smoke_test, record_ceiling -> ceiling_record, diagnose -> read the
rung's reason and fix the cause, done -> the ceiling is recorded. rung_run and smoke_test run as jobs:
they return the result if it comes within wait_s, else a job id for job_status.
A ladder climbed elsewhere (another machine, another workspace) is not climbed again: ladder_adopt copies it in.
To tune a deploy under that ceiling: campaign_init (a grid of serve configs), campaign_plan (the dry run),
campaign_run with i_understand_this_submits_jobs=true (a job: one boot per cell), campaign_status, then
campaign_aggregate, champion_select (always a DRAFT) and campaign_report.
To confirm a champion: ab_run (a same-node A/B, VERDICT or DRAFT; dry_run first), perf_baseline_record and
perf_baseline_diff (GREEN, YELLOW, RED against a recorded baseline), known_good_record (what the model needs)."""


def _listed_order(entry: ToolEntry) -> int:
    """Ladder tools first, then the experiment tools (campaigns, the A/B), the evidence tools (baselines, known-good,
    the frontier, the write-back), then predict and job tools; in
    each module, in the order they are written."""
    modules = [ladder_tools, experiment_tools, evidence_tools, predict_tools, job_tools]
    return [m.__name__ for m in modules].index(entry.fn.__module__)


def build_server(config: ServerConfig, *, on_closed: Callable[[], None] | None = None) -> MCPServer:
    """The MCPServer for one config. on_closed is called once the jobs are ended and their servers
    stopped, as the server shuts down."""
    cache = LadderCache()
    # refused now, before anything runs: a state folder (.redline, .redline/jobs) that is a symlink or not a folder
    derived_dir(config.workspace, STATE_DIR, "jobs", create=True)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[State]:
        try:
            async with running_jobs(config.state_dir / "jobs", functools.partial(stop_server, config)) as jobs:
                targets = config.targets or "built in: local only"
                _log.info("redline MCP server: workspace %s, targets %s", config.workspace, targets)
                yield State(config, jobs, cache)
        finally:
            if on_closed is not None:
                on_closed()

    tools: list[Tool] = [StrictTool.of(entry) for entry in sorted(TOOL_TABLE, key=_listed_order)]
    server = MCPServer("redline", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, tools=tools)
    add_resources(server, config, cache)
    return server
