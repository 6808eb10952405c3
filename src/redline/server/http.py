"""The streamable-HTTP transport: loopback by default, a bearer token for anything else.

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

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from redline.errors import InputError
from redline.server_config import ServerConfig


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

    def __init__(self, app: ASGIApp, token: str, env_name: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.env_name = env_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await self._refuse(send)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": f"missing or wrong bearer token: send `Authorization: Bearer <the token in "
                f"${self.env_name} on the server>`"
            }
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


def http_app(server: MCPServer, config: ServerConfig, host: str) -> ASGIApp:
    """The streamable-HTTP app at /mcp; refused on a non-loopback host unless a bearer token is set."""
    token = config.http.bearer_token()
    if token is None and not is_loopback(host):
        raise InputError(
            f"serving MCP on {host} (not loopback) needs a bearer token: set http.bearer_token_env "
            "in the server config and export that variable, or serve on 127.0.0.1"
        )
    app: ASGIApp = server.streamable_http_app(host=host, transport_security=transport_security(host))
    if token is not None:
        app = BearerAuth(app, token, config.http.bearer_token_env or "")
    return app
