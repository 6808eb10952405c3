"""The HTTP server's bound on connections that have not shown the bearer token.

A loopback port is open to every user of the host, and the server keeps a connection open as long as its client
does: a connection that sends nothing (or half a request) holds a file descriptor for ever, so enough of them from
another user (about a thousand, the usual limit on open files) leave the owner's client nothing to connect with.
So each connection must send a request that carries the token (with `--no-token`: any whole request) within
AUTH_WITHIN_S of connecting, or it is closed; and at most MAX_WAITING connections wait to do so at once: past it the
one that has waited longest with nothing unread is closed, so a caller that sends its request at once (as every MCP
client does) always gets through. A connection whose bytes have arrived but are not yet read (the loop busy
accepting a flood) is never the one closed: its request is judged once it is read (docs/security.md, 38.7); while
every waiting connection has bytes unread, the cap waits for the loop to read them. A connection that has shown the
token is the token holder's, as every request on it is checked again.

    uvicorn.run(app, host=host, port=port, http=guarded_protocol(token))
"""

from __future__ import annotations

import asyncio
import fcntl
import hmac
import struct
import termios
from collections import OrderedDict

from uvicorn.protocols.http.h11_impl import H11Protocol

from redline.server.http import Token

MAX_WAITING = 64  # connections at once that have not yet shown the token
AUTH_WITHIN_S = 5.0  # how long a new connection has to send a request that carries it
RECHECK_S = 0.05  # while every waiting connection has bytes unread: when the cap is held again
# Connections past the cap kept while their bytes wait unread (a burst the loop accepted before reading any): past
# it the longest-waiting is closed all the same, so a flood that sends a byte on each cannot hold every descriptor.
MAX_UNREAD = 512


def guarded_protocol(
    token: Token | None, *, within_s: float = AUTH_WITHIN_S, max_waiting: int = MAX_WAITING
) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol, each connection closed unless it shows `token` within `within_s`, at most
    `max_waiting` waiting at once (past it, the one that waited longest with nothing unread is closed)."""
    expected = None if token is None else f"Bearer {token.value}".encode()
    waiting: OrderedDict[H11Protocol, asyncio.TimerHandle] = OrderedDict()

    class Guarded(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            waiting[self] = self.loop.call_later(within_s, self._unproven)
            _hold_the_cap(waiting, max_waiting, self.loop)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self in waiting and self.headers is not None and _shows(self.headers, expected):
                waiting.pop(self).cancel()

        def connection_lost(self, exc: Exception | None) -> None:
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()
            super().connection_lost(exc)

        def _unproven(self) -> None:
            if waiting.pop(self, None) is not None:
                self.transport.close()

    return Guarded


def _hold_the_cap(
    waiting: OrderedDict[H11Protocol, asyncio.TimerHandle], max_waiting: int, loop: asyncio.AbstractEventLoop
) -> None:
    """Close the longest-waiting connections with nothing unread until at most max_waiting wait; while the rest all
    have bytes unread, look again shortly (the loop reads them first), up to MAX_UNREAD past the cap."""
    while len(waiting) > max_waiting:
        idle = next((conn for conn in waiting if not _unread(conn.transport)), None)
        if idle is None and len(waiting) <= max_waiting + MAX_UNREAD:
            loop.call_later(RECHECK_S, _hold_the_cap, waiting, max_waiting, loop)
            return
        idle = idle or next(iter(waiting))
        waiting.pop(idle).cancel()
        idle.transport.close()


def _unread(transport: asyncio.BaseTransport) -> bool:
    """Whether bytes the peer sent wait in the kernel, not yet read by the loop (FIONREAD on its socket)."""
    sock = transport.get_extra_info("socket")
    if sock is None or transport.is_closing():
        return False
    try:
        unread: int = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        return unread > 0
    except OSError:
        return False


def _shows(headers: list[tuple[bytes, bytes]], expected: bytes | None) -> bool:
    """Whether a whole request's headers carry the token (with none to check: any whole request does)."""
    if expected is None:
        return True
    return hmac.compare_digest(dict(headers).get(b"authorization", b""), expected)


__all__ = ["AUTH_WITHIN_S", "MAX_UNREAD", "MAX_WAITING", "guarded_protocol"]
