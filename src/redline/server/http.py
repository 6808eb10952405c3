"""The streamable-HTTP transport: loopback by default, a bearer token for anything else."""

import hmac
import ipaddress
import json

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from redline.errors import InputError
from redline.server.config import ServerConfig


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
        body = json.dumps({"error": f"missing or wrong bearer token: send `Authorization: Bearer <the token in "
                                    f"${self.env_name} on the server>`"}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="redline"'),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer, config: ServerConfig, host: str) -> ASGIApp:
    """The streamable-HTTP app at /mcp; refused on a non-loopback host unless a bearer token is set."""
    token = config.http.bearer_token()
    if token is None and not is_loopback(host):
        raise InputError(f"serving MCP on {host} (not loopback) needs a bearer token: set http.bearer_token_env "
                         "in the server config and export that variable, or serve on 127.0.0.1")
    app: ASGIApp = server.streamable_http_app(host=host)  # DNS-rebinding protection on loopback hosts
    if token is not None:
        app = BearerAuth(app, token, config.http.bearer_token_env or "")
    return app
