"""Reading what answers on an engine's port (health, metrics, the accuracy gate's answers): whoever listens there may
be a neighbour, not the engine, so what is read is bounded in size and in time.

    text = await read_body(client, url, timeout_s=5.0)               # a GET; its body on 200, else None
    text = await read_body(client, url, 60.0, body=json_text, Host=h)   # a POST of that JSON
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx

MAX_URL_TEXT = 8 << 20  # what http_text keeps of a body: a metrics page is tens of KB


async def read_body(
    client: httpx.AsyncClient, url: httpx.URL, timeout_s: float, body: str | None = None, **headers: str
) -> str | None:
    """The body of a request to an engine's port (http_args: a GET, or a POST of the JSON body) when it answers 200,
    else None. Whoever listens on that port may be a neighbour, so the body is streamed as sent (no decoding) and
    the connection dropped at MAX_URL_TEXT, and the whole exchange has timeout_s (httpx's own timeout is per read:
    a trickle would never end it), past which httpx.ReadTimeout; other httpx.HTTPError as httpx raises them."""
    with anyio.move_on_after(timeout_s):
        args = http_args(body, {**headers, "Accept-Encoding": "identity"})
        async with client.stream(url=url, timeout=timeout_s, **args) as response:
            if response.status_code != 200:
                return None
            data = bytearray()
            async for chunk in response.aiter_raw():
                data += chunk[: MAX_URL_TEXT - len(data)]
                if len(data) >= MAX_URL_TEXT:
                    break  # what is past the cap is never read: the connection is closed unread
            return data.decode("utf-8", errors="replace")
    raise httpx.ReadTimeout(f"{url} gave no whole answer within {timeout_s:g}s")


def http_args(body: str | None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The method, headers and content of a http_text request: a GET, or a POST of the JSON body."""
    if body is None:
        return {"method": "GET", "headers": headers or {}}
    return {"method": "POST", "content": body, "headers": {**(headers or {}), "Content-Type": "application/json"}}


__all__ = ["MAX_URL_TEXT", "http_args", "read_body"]
