"""Fixtures for the MCP server tests. (`anyio_backend` comes from tests/conftest.py.)"""

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from redline.ledger.server_record import ServerRecord
from redline.targets import LocalTarget
from tests.server.helpers import Env, write_env


async def _stop_left_servers(root: Path) -> None:
    """A booted rung stays up for its smoke test by design; a test that ends there must not leave it running."""
    for record_file in root.rglob("*.runs/server.json"):
        record = ServerRecord.model_validate_json(record_file.read_text())
        await LocalTarget(record.handle.target).stop(record.handle, grace_s=5)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    made = write_env(tmp_path / "srv")
    yield made
    anyio.run(_stop_left_servers, tmp_path)
