"""Issue 19, class 7 (the rest): figures read back from planted files are untrusted, through the real MCP server.

A cell's verdict.yml and baselines.yml hold measured figures (a Stat's mean, std, n and values, an SLA's value,
seconds). A planted `.nan`, `.inf`, a negative figure, an absurd magnitude or a huge integer in either is refused
by every reader, naming the field and the file; no tool answers with output that breaks its own output schema
(nothing non-finite, every answer valid against the tool's outputSchema, as strict JSON).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from redline.ledger.campaign_file import cells_of
from redline.server.app import build_server
from tests.campaign.helpers import verdict, write_verdict
from tests.rigor.scenario import ab_spec
from tests.server.helpers import Env, call, free_port, text_of
from tests.server.scenario import CAMPAIGN, campaign_spec

pytestmark = pytest.mark.anyio

# (the YAML text a planted file holds for a figure, the words its refusal says)
HOSTILE = [
    (".nan", "finite number"),
    (".inf", "finite number"),
    ("-.inf", "finite number"),
    ("-1.5", "greater than or equal to 0"),
    ("1.0e+300", "less than or equal to"),
    ("9" * 5000, "digits"),
]
INTEGER_WORDS = {"-1.5": "integer", "1.0e+300": "integer"}  # what a count (n) says of a fraction or a float
CAMPAIGN_READERS = ("campaign_plan", "campaign_status", "campaign_aggregate", "champion_select", "campaign_report")


async def campaign_with_verdicts(client: Client, env: Env) -> Path:
    """campaign c1 with both cells' verdicts written, and baseline `good` recorded from its first cell."""
    await call(client, "campaign_init", campaign=CAMPAIGN, spec=campaign_spec(free_port()))
    results = env.workspace / "campaigns" / "c1"
    for cell, levers, tp in (("mnbt2048", 2048, 100.0), ("mnbt8192", 8192, 120.0)):
        v = verdict(cell, {1: [tp, tp + 1], 4: [tp * 3, tp * 3 + 2]}, extra={"median_tpot_ms": {1: 20.0, 4: 30.0}})
        write_verdict(results, v.model_copy(update={"campaign": "c1", "levers": {"max_num_batched_tokens": levers}}))
    await call(client, "perf_baseline_record", name="good", campaign=CAMPAIGN, cell="mnbt2048")
    return results


def plant(path: Path, field: str, text: str) -> None:
    """The first `field:` with a number in the file now holds `text`."""
    old = path.read_text()
    new, n = re.subn(rf"(\b{field}: )-?[0-9][0-9.e+-]*", lambda m: m.group(1) + text, old, count=1)
    assert n == 1, (field, old[:2000])
    path.write_text(new)


async def schemas(client: Client) -> dict[str, Any]:
    return {t.name: t.output_schema for t in (await client.list_tools()).tools}


async def answer(client: Client, out: dict[str, Any], tool: str, **args: Any) -> str | None:
    """A call's error message; or None when it answered, after checking the answer against its outputSchema."""
    result = await client.call_tool(tool, args)
    if result.is_error:
        return text_of(result)
    content = result.structured_content
    json.dumps(content, allow_nan=False)  # strict JSON: no NaN or Infinity
    if out.get(tool):
        jsonschema.validate(content, out[tool])
    return None


def refused(message: str | None, field: str, file: str, words: str) -> None:
    assert message is not None, "answered a planted figure"
    assert field in message and file in message and words in message, message


VERDICT_CASES = [  # each hostile text once, in a field of each kind: a Stat's, a count, seconds
    ("mean", *HOSTILE[0]),
    ("std", *HOSTILE[1]),
    ("wall_s", *HOSTILE[2]),
    ("boot_s", *HOSTILE[3]),
    ("mean", *HOSTILE[4]),
    ("n", *HOSTILE[5]),
    ("n", *HOSTILE[3]),
]
BASELINE_CASES = [
    ("mean", *HOSTILE[0]),
    ("std", *HOSTILE[3]),
    ("pct_of_ceiling", *HOSTILE[1]),
    ("mean", *HOSTILE[4]),
    ("n", *HOSTILE[5]),
]


@pytest.mark.parametrize(("field", "text", "words"), VERDICT_CASES)
async def test_planted_figures_in_a_verdict_are_refused_by_every_reader_naming_field_and_file(
    env: Env, field: str, text: str, words: str
) -> None:
    words = INTEGER_WORDS.get(text, words) if field == "n" else words
    async with Client(build_server(env.config)) as client:
        results = await campaign_with_verdicts(client, env)
        out = await schemas(client)
        plant(cells_of(results).record_file("mnbt8192"), field, text)
        for tool in CAMPAIGN_READERS:
            refused(await answer(client, out, tool, campaign=CAMPAIGN), field, "verdict.yml", words)
        for tool, args in (
            ("perf_baseline_record", {"name": "new", "campaign": CAMPAIGN, "cell": "mnbt8192"}),
            ("perf_baseline_diff", {"baseline": "good", "campaign": CAMPAIGN, "cell": "mnbt8192"}),
            ("known_good_record", {"from_campaign": CAMPAIGN, "cell": "mnbt8192", "why": "planted"}),
        ):
            refused(await answer(client, out, tool, **args), field, "verdict.yml", words)
        refused(await answer(client, out, "campaign_run", campaign=CAMPAIGN, dry_run=True), field, "verdict.yml", words)
    kept = (env.workspace / "baselines.yml").read_text().lower()
    assert ".nan" not in kept and ".inf" not in kept and "new:" not in kept  # nothing reached baselines.yml


@pytest.mark.parametrize(("field", "text", "words"), BASELINE_CASES)
async def test_planted_figures_in_baselines_yml_are_refused_by_every_reader_naming_field_and_file(
    env: Env, field: str, text: str, words: str
) -> None:
    async with Client(build_server(env.config)) as client:
        await campaign_with_verdicts(client, env)
        out = await schemas(client)
        path = env.workspace / "baselines.yml"
        if field == "pct_of_ceiling":
            text_now = re.sub(
                r"^( *)basis:", r"\1pct_of_ceiling: 50.0\n\1basis:", path.read_text(), count=1, flags=re.M
            )
            path.write_text(text_now)
        words = INTEGER_WORDS.get(text, words) if field == "n" else words
        plant(path, field, text)
        for tool, args in (
            ("perf_baseline_diff", {"baseline": "good", "campaign": CAMPAIGN, "cell": "mnbt8192"}),
            ("perf_baseline_record", {"name": "other", "campaign": CAMPAIGN, "cell": "mnbt8192"}),
            ("perf_baseline_diff", {"baseline": "good", "against": "good"}),
        ):
            refused(await answer(client, out, tool, **args), field, "baselines.yml", words)


@pytest.mark.parametrize(("field", "text", "words"), [("wall_s", *HOSTILE[0]), ("median_tpot_ms", *HOSTILE[3])])
async def test_planted_figures_in_an_ab_trial_are_refused_by_every_reader_naming_field_and_file(
    env: Env, field: str, text: str, words: str
) -> None:
    """An A/B's trial.yml (its record, the bench's figures in it) read back: a planted figure is refused."""
    spec = ab_spec(free_port()) | {"trials": 1}
    async with Client(build_server(env.config)) as client:
        ran = await call(client, "ab_run", spec=spec, i_understand_this_submits_jobs=True, wait_s=120)
        assert ran["state"] == "succeeded", ran
        await call(client, "perf_baseline_record", name="a", ab="ab1", arm="a")
        out = await schemas(client)
        plant(env.workspace / "ab" / "ab1" / "trials" / "b-1" / "trial.yml", field, text)
        for tool, args in (
            ("perf_baseline_record", {"name": "b", "ab": "ab1", "arm": "b"}),
            ("perf_baseline_diff", {"baseline": "a", "ab": "ab1", "arm": "b"}),
            ("known_good_record", {"from_ab": "ab1", "arm": "b", "why": "planted"}),
            ("ab_run", {"spec": spec | {"trials": 2}, "i_understand_this_submits_jobs": True, "wait_s": 60}),
        ):
            message = await answer(client, out, tool, **args)
            if tool == "ab_run" and message is None:  # a job: its error is the refusal
                job = (await call(client, "job_list"))["jobs"][0]
                message = json.dumps(job)
            refused(message, field, "trial.yml", words)


async def test_planted_figures_every_good_answer_keeps_its_output_schema(env: Env) -> None:
    """The readers' answers on sane files: valid against each tool's outputSchema, as strict JSON (the check the
    hostile cases rely on is a real one)."""
    async with Client(build_server(env.config)) as client:
        await campaign_with_verdicts(client, env)
        out = await schemas(client)
        for tool in CAMPAIGN_READERS:
            assert await answer(client, out, tool, campaign=CAMPAIGN) is None, tool
        assert (
            await answer(client, out, "perf_baseline_diff", baseline="good", campaign=CAMPAIGN, cell="mnbt8192") is None
        )
        assert all(out[t] for t in CAMPAIGN_READERS)  # each reader has a schema to check against


async def test_planted_figures_over_stdio(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        results = await campaign_with_verdicts(client, env)
    plant(cells_of(results).record_file("mnbt8192"), "mean", ".nan")
    plant(env.workspace / "baselines.yml", "std", ".inf")
    argv = [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params) as client:
        out = await schemas(client)
        refused(await answer(client, out, "champion_select", campaign=CAMPAIGN), "mean", "verdict.yml", "finite")
        message = await answer(client, out, "perf_baseline_diff", baseline="good", against="good")
        refused(message, "std", "baselines.yml", "finite")
