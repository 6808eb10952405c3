"""Read-only ladder results by file content: a ladder is parsed again only when its bytes changed."""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from redline.errors import RedlineError
from redline.untrusted import MAX_YAML_BYTES, read_regular

_T = TypeVar("_T")


class LadderCache:
    """The results of pure functions of a ladder file, keyed by its content.

    The ladder read (ruamel round-trip YAML) is most of a read-only call; what it gives is a
    pure function of the file, so the content's hash is a safe key.
    """

    def __init__(self, size: int = 64) -> None:
        self._data: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, fn: Callable[..., _T], path: Path, *args: Any) -> _T:
        try:  # as every ladder read: a plain file only (a FIFO is not waited on), capped
            text = read_regular(path, MAX_YAML_BYTES, str(path))
        except (OSError, RedlineError):
            return fn(path, *args)  # missing, unreadable or refused: let fn say so in its own words
        digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
        key = (fn.__module__, fn.__qualname__, str(path), args, digest)
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]  # type: ignore[no-any-return]
        value = fn(path, *args)
        with self._lock:
            self._data[key] = value
            while len(self._data) > self._size:
                self._data.popitem(last=False)
        return value
