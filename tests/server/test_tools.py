"""The tools through the SDK's in-process client: their declarations, their errors, their guards."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

import redline.errors
from redline.errors import RedlineError
from redline.server import jobs as jobs_module
from redline.server.app import build_server
from redline.server.toolkit import mapped, tool_error
from tests.server.helpers import (
    H200,
    Env,
    call,
    call_error,
    fake_servers,
    init_args,
    new_ladder,
    text_of,
    write_targets,
)
from tests.server.scenario import CAMPAIGN_TOOLS, EVERY_TOOL, exercise_every_tool

pytestmark = pytest.mark.anyio

# name: (read_only, destructive, idempotent, open_world)
ANNOTATIONS = {
    "ladder_init": (False, False, True, False),
    "ladder_status": (True, False, True, False),
    "ladder_next_rung": (True, False, True, False),
    "rung_run": (False, True, False, True),
    "smoke_test": (False, True, False, True),
    "rung_record": (False, False, False, False),
    "ceiling_record": (False, True, True, True),
    "ladder_adopt": (False, False, True, False),  # writes a new ladder (and its rung files) once; again: refused
    "parse_boot_log": (True, False, True, False),
    "job_status": (True, False, True, False),
    "job_cancel": (False, True, True, True),
    "job_list": (True, False, True, False),
    "campaign_init": (False, False, True, False),
    "campaign_plan": (True, False, True, False),
    "campaign_run": (False, True, False, True),
    "campaign_status": (True, False, True, False),
    "campaign_aggregate": (True, False, True, False),
    "champion_select": (True, False, True, False),
    "campaign_report": (False, False, True, False),  # rewrites only its own report.md and PNGs
    "ab_run": (False, True, False, True),
    "perf_baseline_record": (False, True, True, False),  # one entry of baselines.yml (replace=true overwrites it)
    "perf_baseline_diff": (True, False, True, False),
    "known_good_record": (False, True, True, False),  # one entry of known-good.yml, updated in place
    "known_good_lookup": (True, False, True, False),
    "known_good_list": (True, False, True, False),
    "known_good_config": (False, True, True, False),  # its verb record writes one entry, as known_good_record does
    "lever_frontier": (True, False, True, False),
    "champion_apply": (False, True, True, False),  # edits the deploy's values file a person also edits, and a baseline
    "memory_predict": (True, False, True, False),
}
LADDER_TOOLS = {
    "ladder_init",
    "ladder_status",
    "ladder_next_rung",
    "rung_run",
    "smoke_test",
    "rung_record",
    "ceiling_record",
}


def test_docs_mcp_md_lists_every_tool_with_its_annotations() -> None:
    """docs/mcp.md's tool table: a row per tool the server has, its four annotations as the server declares them."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_]+)` \| .* \| (yes|no) \| (yes|no) \| (yes|no) \| (yes|no) \|$", text, re.MULTILINE)
    table = {name: tuple(v == "yes" for v in hints) for name, *hints in rows}
    assert set(table) == EVERY_TOOL, (EVERY_TOOL - set(table), set(table) - EVERY_TOOL)
    assert table == ANNOTATIONS


async def test_every_tool_is_declared_with_truthful_annotations_and_typed_output(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == EVERY_TOOL == set(ANNOTATIONS)
    for name, t in tools.items():
        a = t.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == ANNOTATIONS[name], name
        assert t.output_schema and t.output_schema.get("type") == "object", name
        assert t.description and t.title, name
        props = t.input_schema["properties"]
        assert "ctx" not in props, name
        if name in LADDER_TOOLS:
            assert props["ladder"]["type"] == "string" and "ladder" in t.input_schema["required"], name
        if name in CAMPAIGN_TOOLS:
            assert props["campaign"]["type"] == "string" and "campaign" in t.input_schema["required"], name
    assert tools["parse_boot_log"].input_schema["required"] == ["text"]
    assert {"job_id", "state", "done", "result", "hint"} <= set(tools["rung_run"].output_schema["properties"])


def _redline_errors() -> list[type[RedlineError]]:
    found, todo = [], [RedlineError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: c.__name__)


def test_the_error_tree_is_all_found() -> None:
    names = {c.__name__ for c in _redline_errors()}
    declared = {n for n, v in vars(redline.errors).items() if isinstance(v, type) and issubclass(v, RedlineError)}
    assert declared <= names


@pytest.mark.parametrize("cls", _redline_errors(), ids=lambda c: c.__name__)
async def test_every_redline_error_reaches_the_agent_as_a_tool_error_with_its_message(cls: type[RedlineError]) -> None:
    message = f"{cls.__name__}: do this next"
    assert str(tool_error(cls(message))) == message and isinstance(tool_error(cls(message)), ToolError)

    async def failing() -> str:
        raise cls(message)

    server = MCPServer("t")
    server.add_tool(mapped(failing), name="failing")
    async with Client(server) as client:
        result = await client.call_tool("failing", {})
    assert result.is_error and text_of(result) == f"Error executing tool failing: {message}"


async def test_every_tool_in_process(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        assert await exercise_every_tool(client, env) == EVERY_TOOL
    assert not fake_servers(env.port)


async def test_ladders_are_readable_as_resources(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        (env.workspace / "notes.yml").write_text("just: notes\n")
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "redline://ladders" in listed
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert "redline://ladders/{+name}" in templates
        index = json.loads((await client.read_resource("redline://ladders")).contents[0].text)
        assert index == [
            {
                "ladder": "ladders/l8b.yml",
                "model": "llama8b",
                "rungs": 0,
                "next": "run_rung",
                "ceiling_max_model_len": None,
            }
        ]
        text = (await client.read_resource("redline://ladders/ladders/l8b.yml")).contents[0].text
        assert text == (env.workspace / "ladders" / "l8b.yml").read_text()


@pytest.mark.parametrize(
    "uri",
    [
        "redline://ladders/..%2F..%2Fredline-server.yml",
        "redline://ladders/../x.yml",
        "redline://ladders/%2Fetc%2Fpasswd",
        "redline://ladders/nope.yml",
    ],
)
async def test_ladder_resource_outside_workspace_or_missing_is_refused(env: Env, uri: str) -> None:
    async with Client(build_server(env.config)) as client:
        with pytest.raises(Exception) as caught:  # noqa: PT011 - the SDK raises its protocol error
            await client.read_resource(uri)
    said = str(caught.value)
    assert "root:" not in said and "targets.yml" not in said  # nothing of the files outside leaks


@pytest.mark.parametrize(
    "ladder",
    [
        "/etc/passwd.yml",
        "../outside.yml",
        "ladders/../../outside.yml",
        "-rf.yml",
        "~/l.yml",
        ".redline/jobs/x.yml",
        "a\x00b.yml",
    ],
)
async def test_ladder_path_outside_workspace_is_refused(env: Env, ladder: str) -> None:
    async with Client(build_server(env.config)) as client:
        for name in sorted(LADDER_TOOLS):
            args = {"ladder": ladder, **({"target": "local"} if name == "rung_run" else {})}
            if name == "ladder_init":
                args = init_args(ladder)
            message = await call_error(client, name, **args)
            assert "must be a path inside the workspace" in message, (name, message)
    assert not (env.root / "outside.yml").exists()


async def test_ladder_through_a_symlink_out_of_the_workspace_is_refused(env: Env, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (env.workspace / "ladders").mkdir(parents=True)
    (env.workspace / "ladders" / "evil.yml").symlink_to(outside / "evil.yml")
    async with Client(build_server(env.config)) as client:
        message = await call_error(client, "ladder_init", **init_args("ladders/evil.yml"))
    assert "symlink that leads out of the workspace" in message
    assert list(outside.iterdir()) == []


async def test_ladder_must_be_a_yml_file(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        message = await call_error(client, "ladder_init", **init_args("ladders/l8b.json"))
    assert "must be a .yml file" in message


@pytest.mark.parametrize("log_file", ["/etc/passwd", "../redline-server.yml", "--help", ".redline/jobs"])
async def test_log_file_outside_workspace_is_refused(env: Env, log_file: str) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        message = await call_error(client, "rung_record", ladder="ladders/l8b.yml", log_file=log_file)
    assert "log_file" in message and "inside the workspace" in message


@pytest.mark.parametrize("target", ["gpu9", "local; rm -rf /", "$(touch pwned)", "-oProxyCommand=sh", "../local"])
async def test_unknown_or_injected_target_is_refused_before_any_job(env: Env, target: str) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        message = await call_error(client, "rung_run", ladder="ladders/l8b.yml", target=target)
        assert "unknown target" in message and "known targets: local" in message
        assert (await call(client, "job_list"))["jobs"] == []
    assert not fake_servers(env.port)


async def test_rung_record_needs_exactly_one_of_text_or_file(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        both = await call_error(client, "rung_record", ladder="ladders/l8b.yml", log_text="x", log_file="x.log")
        none = await call_error(client, "rung_record", ladder="ladders/l8b.yml")
        missing = await call_error(client, "rung_record", ladder="ladders/l8b.yml", log_file="logs/none.log")
    assert "not both" in both and "nothing to record" in none and "(in the workspace): no such file" in missing


async def test_a_log_of_another_model_is_refused_and_changes_nothing(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        before = (env.workspace / "ladders" / "l8b.yml").read_text()
        message = await call_error(
            client, "rung_record", ladder="ladders/l8b.yml", log_text=(H200 / "q32_128k.log").read_text()
        )
    assert "record it in that model's ladder" in message
    assert (env.workspace / "ladders" / "l8b.yml").read_text() == before


async def test_a_step_out_of_order_is_refused_with_the_route(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        smoke = await call_error(client, "smoke_test", ladder="ladders/l8b.yml")
        again = await call_error(client, "ladder_init", **init_args())
        replay = await call_error(client, "rung_run", ladder="ladders/l8b.yml", target="local", replay=3)
    assert "next step is run_rung, not a smoke test" in smoke
    assert "a ladder is already there" in again
    assert "no rung 3 to replay" in replay


async def test_a_job_that_fails_within_the_wait_is_a_tool_error(env: Env) -> None:
    blocker = env.root / "not-a-folder"
    blocker.write_text("")
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        targets = json.loads((env.root / "targets.yml").read_text())
        targets["targets"]["local"]["workdir"] = str(blocker / "work")  # a file where a folder must be
        (env.root / "targets.yml").write_text(json.dumps(targets))
        message = await call_error(client, "rung_run", ladder="ladders/l8b.yml", target="local", wait_s=30)
        jobs = (await call(client, "job_list"))["jobs"]
    assert "(job j-" in message and "failed" in message
    assert [j["state"] for j in jobs] == ["failed"] and jobs[0]["error"] in message


async def test_progress_reaches_the_caller_while_it_waits(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "HEARTBEAT_S", 0.2)
    write_targets(env, FAKE_VLLM_BOOT_S="1.5")
    seen: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        result = await client.call_tool(
            "rung_run", {"ladder": "ladders/l8b.yml", "target": "local", "wait_s": 60}, progress_callback=progress
        )
        assert not result.is_error, text_of(result)
    values = [v for v, _ in seen]
    assert len(seen) >= 3 and values == sorted(values) and len(set(values)) == len(values)  # only ever grows
    assert any("booting max_model_len=32768" in (m or "") for _, m in seen)
    assert all((m or "").startswith("rung_run j-") for _, m in seen)


async def test_one_job_per_ladder_at_a_time(env: Env) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="30")
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        first = await call(client, "rung_run", ladder="ladders/l8b.yml", target="local", wait_s=0)
        busy = await call_error(client, "rung_run", ladder="ladders/l8b.yml", target="local")
        record = await call_error(client, "rung_record", ladder="ladders/l8b.yml", log_text="x")
        await call(client, "job_cancel", job_id=first["job_id"])
    assert f"job {first['job_id']} (rung_run) is still" in busy and "job_cancel" in busy
    assert "is still" in record


async def test_job_id_outside_the_job_folder_is_refused(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        for tool in ("job_status", "job_cancel"):
            for job_id in ("../../redline-server", "/etc/passwd", "j-1; rm -rf /"):
                assert "is not a job id" in await call_error(client, tool, job_id=job_id)


async def test_server_shutdown_stops_the_servers_of_running_jobs(env: Env) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="30")
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        job = await call(client, "rung_run", ladder="ladders/l8b.yml", target="local", wait_s=1)
        assert fake_servers(env.port)
    assert not fake_servers(env.port)
    async with Client(build_server(env.config)) as client:
        status = await call(client, "job_status", job_id=job["job_id"])
    assert status["state"] == "interrupted" and "shut down" in status["error"]


async def test_a_read_after_a_change_sees_the_change(env: Env) -> None:
    """The read cache is keyed by the file's bytes: a new rung (or a same-size edit) is never hidden."""
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        path = env.workspace / "ladders" / "l8b.yml"
        assert (await call(client, "ladder_status", ladder="ladders/l8b.yml"))["ladder"]["floor"][
            "max_model_len"
        ] == 32768
        text = path.read_text()
        path.write_text(text.replace("max_model_len: 32768", "max_model_len: 16384"))  # one byte shorter
        after = await call(client, "ladder_status", ladder="ladders/l8b.yml")
        step = await call(client, "ladder_next_rung", ladder="ladders/l8b.yml")
        path.write_text(text.replace("max_model_len: 32768", "max_model_len: 32769"))  # same size, same second
        same_size = await call(client, "ladder_next_rung", ladder="ladders/l8b.yml")
    assert after["ladder"]["floor"]["max_model_len"] == 16384 and step["rung"]["max_model_len"] == 16384
    assert same_size["rung"]["max_model_len"] == 32769


async def test_parse_boot_log_reads_with_the_named_engine_and_refuses_an_unknown_one(env: Env) -> None:
    log = (H200 / "q32_128k.log").read_text()
    async with Client(build_server(env.config)) as client:
        named = await call(client, "parse_boot_log", text=log, engine="vllm")
        unknown = await call_error(client, "parse_boot_log", text=log, engine="nosuch")
    assert named["status"] == "boot_ok" and named == await _default_engine_reading(env, log)
    assert "unknown engine 'nosuch'" in unknown and "redline knows sglang, vllm" in unknown


async def _default_engine_reading(env: Env, log: str) -> dict:
    async with Client(build_server(env.config)) as client:
        return await call(client, "parse_boot_log", text=log)


async def test_known_good_config_answers_what_its_three_tools_answer(env: Env) -> None:
    """known_good_config's verbs are known_good_record, known_good_lookup and known_good_list: the same answers;
    a field its verb does not take, an unknown argument and an unknown verb are each refused by name."""
    entry = {
        "model": "/models/m",
        "hardware": "NVIDIA H200",
        "engine_version": "0.26.0",
        "flags": ["--gdn-prefill-backend=triton"],
        "why": "the GDN prefill kernel crashes without it",
        "evidence": [{"kind": "note", "ref": "notes.md"}],
    }
    async with Client(build_server(env.config)) as client:
        by_tool = await call(client, "known_good_record", **entry)
        by_verb = await call(client, "known_good_config", verb="record", **entry)
        assert by_verb["replaced"] and not by_tool["replaced"]  # the same key, updated in place
        same = {k: v for k, v in by_verb.items() if k not in ("replaced", "entry", "note")}
        assert same == {k: v for k, v in by_tool.items() if k not in ("replaced", "entry", "note")}
        assert {**by_verb["entry"], "recorded_at": None} == {**by_tool["entry"], "recorded_at": None}
        key = {k: entry[k] for k in ("model", "hardware", "engine_version")}
        assert await call(client, "known_good_config", verb="lookup", **key) == await call(
            client, "known_good_lookup", **key
        )
        listed = await call(client, "known_good_config", verb="list", model="/models/m")
        assert listed == await call(client, "known_good_list", model="/models/m") and len(listed["entries"]) == 1
        assert "verb list takes no cell: its fields are model" in await call_error(
            client, "known_good_config", verb="list", cell="c"
        )
        assert "unknown argument 'verbs': did you mean 'verb'?" in await call_error(
            client, "known_good_config", verbs="list"
        )
        assert "verb:" in await call_error(client, "known_good_config", verb="delete")
        assert "verb lookup: hardware" in await call_error(client, "known_good_config", verb="lookup", model="m")
