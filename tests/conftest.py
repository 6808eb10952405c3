"""Shared test helpers: where the real captured data lives."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
H200 = DATA / "vllm-0.26.0-h200"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def h200_log(name: str) -> str:
    return (H200 / name).read_text()
