"""A path a tool refuses is told with an example of its own kind of file, and one outside the workspace with how it
comes in (issue 31: a campaign and a log were shown a ladder's path, and no refusal pointed to ladder_adopt)."""

from __future__ import annotations

import pytest
from mcp import Client

from redline.server.app import build_server
from tests.server.helpers import Env, call_error

pytestmark = pytest.mark.anyio


async def test_each_refused_path_gets_its_own_kind_s_example_and_the_way_in(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        ladder = await call_error(client, "ladder_status", ladder="/home/me/ladders/l8b.yml")
        campaign = await call_error(client, "campaign_status", campaign="/home/me/campaigns/c.yml")
        log = await call_error(client, "rung_record", ladder="ladders/l8b.yml", log_file="/var/log/boot.log")
        dotted = await call_error(client, "ladder_status", ladder="../elsewhere/l8b.yml")
    assert "(relative, such as ladders/llama8b.yml), not an absolute path or ~" in ladder
    assert "comes in with ladder_adopt" in ladder and "comes in with ladder_adopt" in dotted
    assert "such as campaigns/llama8b-h200.yml" in campaign and "ladders/" not in campaign
    assert "write one with campaign_init, or copy the file into campaigns/" in campaign
    assert "log_file '/var/log/boot.log' must be a path inside the workspace (relative, such as logs/boot.log)" in log
    assert "paste the log as log_text instead" in log and "ladders/" not in log and "ladder_adopt" not in log
