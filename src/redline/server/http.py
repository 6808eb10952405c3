"""The streamable-HTTP transport: loopback by default, and a bearer token always, unless opted out on loopback.

Every local user can reach a loopback port, so the token is the default (issue 19, class 2): `redline mcp --http`
generates one at start and prints it once on stderr, or reads the one a file or the config's variable names; a
request without `Authorization: Bearer <token>` gets 401. `--no-token` opts out, on loopback only. One token is one
caller: it may hold MAX_SESSIONS sessions at once, and a session idle for SESSION_IDLE_S ends, so abandoned
sessions cannot lock the caller out.

On loopback the guard is DNS-rebinding protection: a web page in the user's browser can make
it send requests to 127.0.0.1, but only with the page's own host name in Host and its origin
in Origin. So Host must name the bound address (in the spellings a client may use) or
localhost, and an Origin, when sent, must be one of those over http. The SDK sets this by
itself only for 127.0.0.1, localhost and ::1 spelled so; redline sets it for every loopback
address: all of 127.0.0.0/8, and ::1 however it is written.
"""

import hmac
import ipaddress
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from redline.errors import InputError
from redline.server_config import ServerConfig
from redline.untrusted import read_regular

MAX_SESSIONS = 8  # open sessions at once (one token: one caller)
SESSION_IDLE_S = 300.0  # a session with no request in flight this long is ended; the client starts a new one
MIN_TOKEN = 16


@dataclass(frozen=True)
class Token:
    """The bearer token a server checks, and where its callers find it (said in a refusal)."""

    value: str
    source: str
    generated: bool = False


def token_from_file(path: Path) -> Token:
    """The token in a file the user names: its first line; a file others can read is refused."""
    what = f"--token-file {path}"
    try:
        text = read_regular(path, 4096, what)
        mode = path.stat().st_mode
    except OSError as exc:
        raise InputError(f"{what}: cannot read it ({exc.strerror}); write a long random token there") from exc
    if mode & 0o077:
        raise InputError(f"{what} can be read by others (mode {mode & 0o777:o}): chmod 600 it")
    value = (text.splitlines() or [""])[0].strip()
    if len(value) < MIN_TOKEN:
        raise InputError(f"{what}: its first line must be a token of at least {MIN_TOKEN} characters")
    return Token(value, f"the file {path}")


def server_token(config: ServerConfig, host: str, token_file: Path | None, no_token: bool) -> Token | None:
    """The token this server checks: the file's, else the config's variable's, else a new one; None opted out."""
    if no_token:
        if token_file is not None or config.http.bearer_token_env:
            raise InputError("--no-token: a token is named (--token-file or http.bearer_token_env); drop one")
        if not is_loopback(host):
            raise InputError(
                f"--no-token: serving MCP on {host} (not loopback) needs a bearer token; serve on 127.0.0.1"
            )
        return None
    if token_file is not None:
        return token_from_file(token_file)
    if (value := config.http.bearer_token()) is not None:
        return Token(value, f"${config.http.bearer_token_env} on the server")
    if not is_loopback(host):  # a token printed to a log is for this host's users, not a network's
        raise InputError(
            f"serving MCP on {host} (not loopback) needs a bearer token you name: set http.bearer_token_env "
            "in the server config and export that variable, or pass --token-file FILE, or serve on 127.0.0.1"
        )
    return Token(secrets.token_urlsafe(32), "the line `redline mcp` printed on stderr at start", generated=True)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_address(host: str) -> str:
    """The address to listen on, in its one canonical spelling (`[0:0::1]` -> `::1`); a name stays as it is."""
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return host


def host_names(host: str) -> list[str]:
    """How a Host header may name a loopback server bound to `host`: the address (IPv6 in brackets), and localhost."""
    if host == "localhost":
        return ["localhost", "127.0.0.1", "[::1]"]
    address = ipaddress.ip_address(host.strip("[]"))
    if address.version == 6:
        return [f"[{address.compressed}]", f"[{address.exploded}]", "localhost"]
    return [str(address), "localhost"]


def transport_security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback bind, set explicitly whatever the address; off elsewhere,
    where the bearer token is the guard (a page in a browser cannot send it) and Host can be any name."""
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = host_names(host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[*(f"http://{n}" for n in names), *(f"http://{n}:*" for n in names)],
    )


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: Token) -> None:
        self.app = app
        self.expected = f"Bearer {token.value}".encode()
        self.source = token.source

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await self._refuse(send)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {"error": f"missing or wrong bearer token: send `Authorization: Bearer <the token in {self.source}>`"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="redline"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer, host: str, token: Token | None) -> ASGIApp:
    """The streamable-HTTP app at /mcp, behind the bearer token; without one only on a loopback host."""
    if token is None and not is_loopback(host):
        raise InputError(f"serving MCP on {host} (not loopback) needs a bearer token: drop --no-token")
    app: ASGIApp = server.streamable_http_app(
        host=host,
        transport_security=transport_security(host),
        max_sessions=MAX_SESSIONS,
        session_idle_timeout=SESSION_IDLE_S,
    )
    return app if token is None else BearerAuth(app, token)
