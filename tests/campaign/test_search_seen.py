"""A search seen from outside, over MCP: campaign_plan, campaign_run's dry run and campaign_status give its budget,
what it spent, its proposals, why it stopped and what a resume would do, each the same as the others and as
search.yml. The UX run's case: a grid of 4 cells under a 3-boot budget, where the plan said "4 boots" and, once the
search had stopped, campaign_status said "campaign_run resumes at 'mnbt256-seqs8'"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.ledger.search_file import read_search_log
from redline.server.app import build_server
from tests.server.helpers import LLAMA8B, Env, call, write_env, write_targets

pytestmark = pytest.mark.anyio
CAMPAIGN = "campaigns/c1.yml"


@pytest.fixture
def env(tmp_path: Path) -> Env:
    made = write_env(tmp_path / "srv", FAKE_VLLM_DECODE_MODEL="1")
    model = made.workspace / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    spec = {
        "name": "c1",
        "target": "local",
        "model": str(model),
        "base": {"max_model_len": 4096, "port": made.port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "warmup_requests": 0,
        "grid": {"max_num_batched_tokens": [256, 2048], "max_num_seqs": [4, 8]},
        "search": {"initial": 2, "budget_boots": 3, "patience": 3},
    }
    path = made.workspace / CAMPAIGN
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(spec))
    return made


async def views(client: Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The plan, the dry run's plan and the status, as an agent reads them."""
    plan = await call(client, "campaign_plan", campaign=CAMPAIGN)
    dry = await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
    status = await call(client, "campaign_status", campaign=CAMPAIGN)
    return plan, dry["result"], status


async def test_the_plan_the_dry_run_and_the_status_say_the_same_search_as_search_yml(env: Env) -> None:
    write_targets(env, FAKE_VLLM_DECODE_MODEL="1")
    async with Client(build_server(env.config)) as client:
        plan, dry, status = await views(client)
        for search in (plan["search"], dry["plan"]["search"], status["search"]):
            assert (search["budget_boots"], search["booted"], search["proposals"], search["stopped"]) == (
                3,
                0,
                [],
                None,
            )
            assert search["resume"].startswith("proposes mnbt256-seqs4: ")  # the baseline opens the search
        assert plan["boots"] == dry["plan"]["boots"] == 3  # under the budget, not the grid's 4
        assert plan["replicates"] == 2 and "then up to 2 replicate boots of the top cells" in dry["reason"]
        assert status["next"] == f"call campaign_run: the search {status['search']['resume']}"
        assert (
            dry["next"] == f"call campaign_run with i_understand_this_submits_jobs=true: the search {search['resume']}"
        )

        ran = await call(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True, wait_s=120)
        assert ran["done"] and ran["state"] == "succeeded", ran

        log = read_search_log(env.workspace / "campaigns" / "c1")
        assert log is not None and log.stopped is not None
        plan, dry, status = await views(client)
        for search in (plan["search"], dry["plan"]["search"], status["search"]):
            assert search["stopped"] == log.stopped and len(search["proposals"]) == len(log.steps)
            assert search["booted"] == 3 and search["resume"].startswith("boots nothing: it stopped")
        assert plan["boots"] == dry["plan"]["boots"] == 0 and plan["replicates"] == 0  # the top two's are booted
        assert "resumes at" not in status["next"] and status["next"].startswith(f"the search stopped ({log.stopped}): ")
        assert "call champion_select" in status["next"] and status["next"] == ran["result"]["next"]
        assert "(measured: the boot-to-boot spread of" in status["noise"]
