"""One next step (issue 40, item 6): campaign_status, campaign_run's answer and its dry run say it by one function
(ops/campaign/next_hint.py). After a stopped search it is champion_select, and how to search further (a larger
budget, which campaign_run then searches on with); never "delete search.yml", which nothing over MCP can do. Over
MCP it names MCP tools; at a terminal, `redline` commands, and `redline campaign status` prints what --json holds.

Before: the stopped search's next step was "campaign_run: the search boots nothing: it stopped (...); delete
search.yml to search again" in campaign_status, where campaign_run itself said champion_select; the CLI printed
`call champion_select` and `i_understand_this_submits_jobs=true`; `redline campaign status` had no noise or search
line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.cli import main
from redline.cli.words import COMMANDS, cli_words
from redline.server.app import build_server
from tests.server.helpers import Env, call, fake_servers, write_targets
from tests.server.test_one_judge_whys import fake_env, no_op_pair, run

pytestmark = pytest.mark.anyio


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return fake_env(tmp_path)


def budget(env: Env, boots: int) -> str:
    grid = {"max_num_seqs": [8, 4], "max_num_batched_tokens": [2048, 8192]}
    return no_op_pair(env, "hunt", grid=grid, replicates=0, search={"initial": 1, "budget_boots": boots})


async def test_a_stopped_search_points_to_champion_select_and_a_larger_budget_searches_on(env: Env) -> None:
    write_targets(env, FAKE_VLLM_DECODE_MODEL="1")
    campaign = budget(env, 2)
    async with Client(build_server(env.config)) as client:
        dry = await call(client, "campaign_run", campaign=campaign, dry_run=True)
        ran = await run(client, campaign)
        status = await call(client, "campaign_status", campaign=campaign)
        budget(env, 3)  # a larger budget
        again = await call(client, "campaign_status", campaign=campaign)
        more = await run(client, campaign)
    assert dry["result"]["next"].startswith("call campaign_run with i_understand_this_submits_jobs=true: the search")
    assert ran["boots"] == 2 and ran["next"] == status["next"]  # the run and the status: one next step
    assert status["next"].startswith("the search stopped (the budget of 2 boots is spent): call champion_select")
    assert "to search further, give it a larger budget (search.budget_boots" in status["next"]
    assert "delete" not in status["next"] and "search.yml" not in status["search"]["resume"]
    assert again["next"].startswith("call campaign_run: the search proposes ")
    assert "(it had stopped: the budget of 2 boots is spent; its spec now allows more)" in again["next"]
    assert more["boots"] == 1 and "the search booted 3 of 4 cells" in more["reason"]
    assert fake_servers(env.port) == []


def test_the_cli_says_its_own_commands_and_status_prints_what_its_json_holds(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = env.workspace / no_op_pair(env)
    assert main(["campaign", "status", "--campaign", str(campaign)]) == 0
    text = capsys.readouterr().out
    assert main(["campaign", "status", "--campaign", str(campaign), "--json"]) == 0
    held: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert f"noise: {held['noise']}" in text and f"next: {held['next']}" in text
    assert "`redline campaign run`" in held["next"] and not any(tool in text for tool in COMMANDS)
    searched = env.workspace / budget(env, 2)
    assert main(["campaign", "status", "--campaign", str(searched)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "search: budget 2 boots; booted 0 cells, 0 GPU-seconds" in lines
    assert any(line.startswith("  resume: proposes ") for line in lines)


def test_every_tool_the_cli_names_is_a_command_it_has() -> None:
    parser_help = {name: cmd.split()[1:] for name, cmd in COMMANDS.items()}
    for tool, words in parser_help.items():
        with pytest.raises(SystemExit) as exit_:
            main([*words, "--help"])
        assert exit_.value.code == 0, tool


def test_a_line_in_mcp_words_is_printed_in_the_cli_s() -> None:
    said = "lower it, or pass allow_long_context=true; fix it or pass `max_position_embeddings`; call campaign_run"
    assert cli_words(said) == (
        "lower it, or pass --allow-long-context; fix it or pass --max-position-embeddings; call `redline campaign run`"
    )
    assert cli_words("--enable-foo=true and ab/ab_run.yml") == "--enable-foo=true and ab/ab_run.yml"  # data kept


def test_the_cli_s_words_are_the_commands_the_operations_are_exposed_as() -> None:
    from tests.test_operations_agree import SURFACES

    exposed = {tool: "redline " + " ".join(s.cli) for tool, s in SURFACES.items() if s.cli is not None}
    assert COMMANDS == exposed
