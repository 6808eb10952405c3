"""ServerHandle: the shape saved in job files and server records, and the released flat shape it still reads."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from redline.targets import PosixLocator, ServerHandle

COMMON = {
    "target": "gpu1",
    "run_dir": "/tmp/redline/runs/r1",
    "log_path": "/tmp/redline/runs/r1/server.log",
    "started_at": "2026-11-30T10:00:00+00:00",
}


def test_the_released_flat_shape_loads_into_a_locator() -> None:
    flat = {**COMMON, "pid": 4242, "pgid": 4242, "start_ticks": 987654}
    handle = ServerHandle.model_validate_json(json.dumps(flat))
    assert handle.locator == PosixLocator(pid=4242, pgid=4242, start_ticks=987654)
    assert handle.model_dump() == {
        **COMMON,
        "locator": {"kind": "posix", "pid": 4242, "pgid": 4242, "start_ticks": 987654},
    }
    # start_ticks was optional in the released shape
    older = ServerHandle.model_validate({**COMMON, "pid": 4242, "pgid": 4242})
    assert older.locator.start_ticks is None


def test_the_new_shape_round_trips() -> None:
    handle = ServerHandle(**COMMON, locator=PosixLocator(pid=77, pgid=77, start_ticks=5))
    assert ServerHandle.model_validate_json(handle.model_dump_json()) == handle
    assert json.loads(handle.model_dump_json())["locator"]["kind"] == "posix"
    assert handle.describe() == "process group 77"


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ({**COMMON, "pid": 1, "pgid": 1}, "greater than 1"),  # never a handle on init or on every process
        ({**COMMON, "pid": 42, "pgid": 42, "host": "x"}, "host"),
        ({**COMMON, "locator": {"kind": "pod", "name": "p"}}, "pod"),
        ({**COMMON, "locator": {"pid": 42, "pgid": 42}}, "kind"),
        ({**COMMON, "locator": {"kind": "posix", "pid": 42, "pgid": 42}, "pid": 42}, "pid"),
        ({**COMMON}, "locator"),
    ],
)
def test_bad_handles_are_refused(data: dict[str, object], complaint: str) -> None:
    with pytest.raises(ValidationError, match=complaint):
        ServerHandle.model_validate(data)


def test_a_handle_is_frozen() -> None:
    handle = ServerHandle(**COMMON, locator=PosixLocator(pid=77, pgid=77))
    with pytest.raises(ValidationError):
        handle.target = "other"  # type: ignore[misc]
