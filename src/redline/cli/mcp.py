"""`redline mcp [--config FILE] [--http [--host H] [--port N] [--token-file F | --no-token]]`: the tools over MCP.

The config file is --config, else $REDLINE_SERVER_CONFIG, else ./redline-server.yml if there is
one. With none of them the server still starts: its workspace is the user's data folder
(server_config.default_workspace) and its only target is this host, as `local`; one line on
stderr says so. On stdio (the default) stdout is the protocol, so everything else goes to stderr.
SIGTERM, like the client closing stdin, cancels the running jobs, which stop
the servers they started, before the process exits. Over HTTP every request needs the bearer token: the one
--token-file holds, else the one the config's http.bearer_token_env names, else one generated at start and
printed once on stderr (server/http.py); --no-token, on loopback only, lets every local user call.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from redline.errors import InputError
from redline.server_config import ServerConfig, default_server_config, load_server_config

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from redline.server.http import Token

_log = logging.getLogger("redline.server")

DEFAULT_CONFIG = "redline-server.yml"
CONFIG_ENV = "REDLINE_SERVER_CONFIG"
DEFAULT_PORT = 8765


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the redline tools to MCP clients (stdio, or streamable HTTP with --http)",
        description="Serve every redline step as an MCP tool. The config file names the workspace and the targets "
        "file; without one, the workspace is your user data folder and the only target is this host.",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help=f"the server config (default: ${CONFIG_ENV}, else ./{DEFAULT_CONFIG}, else none: the "
        "default workspace and this host as `local`)",
    )
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio"
    )
    parser.add_argument(
        "--host",
        default=None,
        help="with --http: the address to listen on (default 127.0.0.1; "
        "any other needs http.bearer_token_env in the config)",
    )
    parser.add_argument("--port", type=int, default=None, help=f"with --http: the port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="with --http: read the bearer token from this file (owner-only, its first line); default: "
        "http.bearer_token_env's variable, else a new token printed once on stderr",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="with --http on loopback: no bearer token, so every local user can call the server (tests only)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level, format="redline-mcp %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))  # not every health poll
    if not args.http and (args.host is not None or args.port is not None):
        raise InputError("--host and --port are for --http; stdio needs neither")
    if not args.http and (args.token_file is not None or args.no_token):
        raise InputError("--token-file and --no-token are for --http; stdio needs neither")
    # The server, and with it the MCP SDK and uvicorn, loads only for this command: not for every `redline` one.
    import uvicorn

    from redline.server.app import build_server, guarded_protocol, http_app
    from redline.server.http import bind_address, server_token
    from redline.server.jobs import CLEANUP_BOUND_S

    config = _config(args.config)
    if not args.http:
        anyio.run(_serve_stdio, functools.partial(build_server, config), CLEANUP_BOUND_S + 30)
        return 0
    host, port = bind_address(args.host or "127.0.0.1"), args.port or DEFAULT_PORT
    if not 0 < port < 65536:
        raise InputError(f"--port {port} is not a TCP port (1-65535)")
    token = server_token(config, host, args.token_file, args.no_token)
    app = http_app(build_server(config), host, token)
    _announce(config, host, port, token)
    # uvicorn handles SIGTERM and SIGINT itself: it shuts down the app, whose lifespan ends the jobs
    guarded = guarded_protocol(token)  # a connection shows the token within seconds or is closed
    uvicorn.run(app, host=host, port=port, log_level=args.log_level.lower(), lifespan="on", http=guarded)
    return 0


def _announce(config: ServerConfig, host: str, port: int, token: Token | None) -> None:
    """Where the HTTP server listens, and its token where it made one (or that it has none), on stderr."""
    shown = f"[{host}]" if ":" in host else host
    print(
        f"redline MCP server on http://{shown}:{port}/mcp (workspace {config.workspace})", file=sys.stderr, flush=True
    )
    if token is None:
        print("redline mcp: --no-token: every user of this host can call this server", file=sys.stderr, flush=True)
    elif token.generated:
        print(
            f"redline mcp: bearer token (send `Authorization: Bearer <token>`): {token.value}",
            file=sys.stderr,
            flush=True,
        )


def _config(given: Path | None) -> ServerConfig:
    """The config file's config; with no file to read, the default one, said on stderr."""
    path = given or os.environ.get(CONFIG_ENV) or (DEFAULT_CONFIG if Path(DEFAULT_CONFIG).is_file() else None)
    if path:
        return load_server_config(path)
    config = default_server_config()
    print(
        f"redline mcp: no config file, so the workspace is {config.workspace} and the only target is `local` "
        f"(this host); pass --config FILE (or set ${CONFIG_ENV}) to choose the workspace and targets",
        file=sys.stderr,
        flush=True,
    )
    return config


async def _serve_stdio(build: Callable[..., MCPServer], cleanup_s: float) -> None:
    """Serve on stdio until the client closes stdin, or a SIGTERM/SIGHUP comes.

    On a signal the server is cancelled, so its lifespan ends the jobs and stops their
    servers (waiting up to cleanup_s for that); then the process exits at once, since the
    thread that reads stdin would otherwise hold it until the client closed its end.
    """
    closed = anyio.Event()
    server = build(on_closed=closed.set)
    serving = anyio.CancelScope()
    async with anyio.create_task_group() as tg:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                async for signum in signals:
                    _log.info("%s: stopping the jobs and their servers", signal.Signals(signum).name)
                    serving.cancel()
                    with anyio.move_on_after(cleanup_s):
                        await closed.wait()
                    await anyio.sleep(0.5)  # a transport that can close cleanly does so now
                    sys.stderr.flush()
                    os._exit(0)

        tg.start_soon(on_signal)
        with serving:
            try:
                await server.run_stdio_async()
            except* BrokenPipeError:  # the client closed its end before the last answer: nobody is left to read it
                _log.info("the client closed stdout before the server's last answer")
        tg.cancel_scope.cancel()
