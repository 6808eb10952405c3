"""Work that must not hold the event loop: blocking file work in a thread, big texts in a worker process.

    signals = await off_loop(engine.parse_boot_log, text, size=len(text))

A thread is enough for file I/O (it lets go of the GIL), but a parser of a 64 MB text holds the GIL
for seconds and starves the loop (every other tool call, job progress, a shutdown). So a text over
PROCESS_OVER bytes goes to a worker process, killed if the call is cancelled. What runs there must
be picklable: a module-level function or a bound method of a plain object, with plain arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_process
from anyio import BrokenWorkerProcess

from redline.errors import RedlineError

_T = TypeVar("_T")

PROCESS_OVER = 4 << 20  # above this, a parse holds the GIL long enough to be felt by the other calls


async def off_loop(fn: Callable[..., _T], *args: Any, size: int = 0, **kwargs: Any) -> _T:
    """fn(*args, **kwargs) away from the event loop: in a thread, or in a worker process when size is big."""
    call = functools.partial(fn, *args, **kwargs)
    if size <= PROCESS_OVER:
        return await anyio.to_thread.run_sync(call)
    try:
        return await anyio.to_process.run_sync(call, cancellable=True)
    except BrokenWorkerProcess as exc:
        raise RedlineError(
            f"the worker process that read a {size >> 20} MiB input died ({exc.__cause__ or exc}); "
            "is the machine out of memory? Try a smaller input"
        ) from exc
