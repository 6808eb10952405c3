"""Issue 19, class 5: sub-keys of JSON-valued levers, through the real MCP server (in-process, and over stdio).

A draft model, its revision, code revision or download folder given as a sub-key of `--speculative-config`
(dotted, whole JSON, nested JSON) is refused by every tool that takes extra flags, naming the sub-key, as
`--spec-model` and `--revision` are; the allowlisted sub-keys pass; SGLang's levers take no JSON object.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from redline.server.app import build_server
from tests.server.helpers import LLAMA8B, Env, call, call_error, free_port, init_args
from tests.server.scenario import CAMPAIGN, campaign_spec

pytestmark = pytest.mark.anyio

# (a flag, the sub-key path its refusal names, the words of the reason)
HOSTILE = [
    ("--speculative-config.model=/etc/evil", "speculative_config.model", "names a draft model"),
    ('--speculative-config={"method": "ngram", "revision": "evil"}', "speculative_config.revision", "come from"),
    ('--speculative-config={"code_revision": "x"}', "speculative_config.code_revision", "come from"),
    ("--speculative_config.download_dir=/tmp/x", "speculative_config.download_dir", "a path on the host"),
    (
        '--speculative-config={"draft_load_config": {"download_dir": "/x"}}',
        "speculative_config.draft_load_config",
        "a path on the host",
    ),
    ("--speculative.tokenizer=/etc/evil", "speculative_config.tokenizer", "come from"),
    ('--limit-mm-per-prompt={"image": {"path": "/etc/passwd"}}', "limit_mm_per_prompt.image.path", "not a sub-key"),
    ('--attention-config={"trust_remote_code": true}', "attention_config.trust_remote_code", "own Python code"),
]
GOOD = '--speculative-config={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'


def named(message: str, path: str, words: str) -> None:
    assert f"({path}) is refused" in message and words in message, message


@pytest.mark.parametrize(("flag", "path", "words"), HOSTILE)
async def test_json_lever_subkeys_are_refused_by_every_tool_that_takes_flags(
    env: Env, flag: str, path: str, words: str
) -> None:
    async with Client(build_server(env.config)) as client:
        ladder = init_args("ladders/l.yml", fixed={"port": free_port(), "extra_flags": [flag]})
        named(await call_error(client, "ladder_init", **ladder), path, words)
        assert not (env.workspace / "ladders" / "l.yml").exists()
        spec = campaign_spec(free_port(), grid=None, cells=[{"name": "a"}, {"name": "b", "extra_flags": [flag]}])
        named(await call_error(client, "campaign_init", campaign=CAMPAIGN, spec=spec), path, words)
        assert not (env.workspace / CAMPAIGN).exists()
        (env.workspace / CAMPAIGN).parent.mkdir(parents=True, exist_ok=True)
        (env.workspace / CAMPAIGN).write_text(json.dumps(spec))  # a file dropped in by hand: JSON is YAML
        named(await call_error(client, "campaign_plan", campaign=CAMPAIGN), path, words)
        named(await call_error(client, "campaign_run", campaign=CAMPAIGN, dry_run=True), path, words)
        serve = {"model": str(LLAMA8B), "max_model_len": 4096, "port": free_port()}
        arms = [{"name": "a", "serve": serve}, {"name": "b", "serve": serve | {"extra_flags": [flag]}}]
        ab = {"name": "ab1", "target": "local", "arms": arms, "workload": {"input_len": 128, "output_len": 16}}
        ab |= {"concurrencies": [1, 4], "trials": 1}
        named(await call_error(client, "ab_run", spec=ab, dry_run=True), path, words)
        entry = {"model": str(LLAMA8B), "hardware": "cpu", "engine_version": "0.26.0", "flags": [flag]}
        entry |= {"why": "w", "evidence": [{"kind": "note", "ref": "n"}]}
        named(await call_error(client, "known_good_record", **entry), path, words)


async def test_json_lever_subkeys_in_the_allowlist_pass_and_their_own_flags_stay_refused(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        made = await call(client, "ladder_init", **init_args(fixed={"port": free_port(), "extra_flags": [GOOD]}))
        assert made["fixed"]["extra_flags"] == [GOOD]
        for own in ("--spec-model=/etc/evil", "--revision=evil", "--download-dir=/x"):
            message = await call_error(
                client, "ladder_init", **init_args("ladders/o.yml", fixed={"extra_flags": [own]})
            )
            assert "is refused" in message, message


async def test_json_lever_subkeys_sglang_levers_take_no_json_object(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        for flag, words in (
            ('--speculative-algorithm={"model": "/etc/evil"}', "takes a value, not a JSON object"),
            ("--speculative-algorithm.model=/etc/evil", "no dotted sub-keys"),
            ("--speculative-draft-model-path=/etc/evil", "where the model's code or files come from"),
        ):
            ladder = init_args("ladders/s.yml", engine="sglang", fixed={"port": free_port(), "extra_flags": [flag]})
            message = await call_error(client, "ladder_init", **ladder)
            assert words in message, message


async def test_json_lever_subkeys_over_stdio(env: Env) -> None:
    argv = [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params) as client:
        for flag, path, words in HOSTILE[:3]:
            args: dict[str, Any] = init_args("ladders/l.yml", fixed={"port": free_port(), "extra_flags": [flag]})
            named(await call_error(client, "ladder_init", **args), path, words)
