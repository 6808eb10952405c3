"""Hardening classes 1 and 2: code execution through knobs, and owned flags smuggled in another spelling.

Every extra flag is resolved the way vLLM's own parser would resolve it (the table in
engines/vllm/data/serve-flags.json was read from `vllm serve`'s argparse parser).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engines import get_engine
from redline.engines.vllm import flags
from redline.errors import InputError
from redline.models import ServeConfig, Widening
from redline.ops.session import ServeSession
from redline.targets import LocalTarget

VLLM = get_engine("vllm")


def config(**knobs) -> ServeConfig:
    return ServeConfig(model="/models/m", max_model_len=4096, **knobs)


# ---- class 1: code execution through knobs -------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "why"),
    [
        ("--trust-remote-code", "runs the model repository's own Python code"),
        ("--worker-extension-cls=evil.Ext", "loads Python code"),
        ("--middleware=evil.app", "loads Python code"),
        ("--tool-parser-plugin=/tmp/x.py", "loads Python code"),
        ("--logits-processors=evil.P", "loads Python code"),
        ("--allowed-local-media-path=/", "reads or writes a path on the host"),
        ("--chat-template=/etc/shadow", "reads or writes a path on the host"),
        ("--config=/tmp/more-flags.yaml", "reads or writes a path on the host"),
        ("--kv-transfer-config={}", "connects the server to other hosts"),
        ("--api-key=x", "changes who can reach the server"),
        ("--revision=main", "changes where the model's code or files come from"),
    ],
)
def test_code_execution_through_knobs_flags_that_load_code_or_widen_access_are_refused_with_the_reason(flag, why):
    with pytest.raises(InputError, match=why):
        VLLM.admit(config(extra_flags=[flag]))


def test_code_execution_through_knobs_a_flag_that_is_no_lever_is_refused_by_the_allowlist():
    with pytest.raises(InputError, match="not a serving lever redline allows"):
        VLLM.admit(config(extra_flags=["--enable-sleep-mode"]))
    with pytest.raises(InputError, match="not a `vllm serve` option"):
        VLLM.admit(config(extra_flags=["--no-such-flag=1"]))


def test_code_execution_through_knobs_serving_levers_pass():
    assert (
        VLLM.admit(
            config(extra_flags=["--seed=7", "--block-size=32", "--async-scheduling", "--kv-cache-memory-bytes=8388608"])
        )
        == []
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("LD_PRELOAD", "loader or the interpreter"),
        ("PYTHONPATH", "loader or the interpreter"),
        ("LD_LIBRARY_PATH", "loader or the interpreter"),
        ("VLLM_PLUGINS", "loader or the interpreter"),
        ("HF_ENDPOINT", "where code and files come from"),
        ("SOMETHING_ELSE", "not an engine setting"),
    ],
)
def test_code_execution_through_knobs_env_that_changes_what_code_runs_is_refused(name, why):
    with pytest.raises(InputError, match=why):
        VLLM.admit(config(env={name: "x"}))


def test_code_execution_through_knobs_a_widening_allows_on_purpose_and_says_what_it_used():
    widening = Widening(flags=["--trust-remote-code"], env=["LD_PRELOAD"])
    used = VLLM.admit(config(extra_flags=["--trust-remote-code", "--seed=1"], env={"LD_PRELOAD": "x"}), widening)
    assert used == ["flag --trust-remote-code (trust_remote_code)", "env LD_PRELOAD"]


def test_code_execution_through_knobs_a_widening_never_frees_an_owned_knob():
    with pytest.raises(InputError, match="owns"):
        VLLM.admit(config(extra_flags=["--max-model-len=9"]), Widening(flags=["--max-model-len"]))


def test_code_execution_through_knobs_the_target_env_wins_and_the_override_is_refused_by_name():
    target = LocalTarget("gpu", engine_env={"CUDA_VISIBLE_DEVICES": "0", "HF_HUB_OFFLINE": "1"})
    session = ServeSession(target, VLLM)
    with pytest.raises(InputError, match="CUDA_VISIBLE_DEVICES, HF_HUB_OFFLINE.*the target's env wins"):
        session.admit(config(env={"CUDA_VISIBLE_DEVICES": "1", "HF_HUB_OFFLINE": "0"}))


# ---- class 2: owned flags smuggled in another spelling ------------------------------------------

OWNED_OPTIONS = sorted(o for o, dest in flags._table()[0].items() if dest in flags.OWNED and o.startswith("--"))


def _unique_prefixes(option: str) -> list[str]:
    options = [o for o in flags._table()[0] if o.startswith("--")]
    unique = [
        option[:n]
        for n in range(3, len(option))
        if {flags._table()[0][o] for o in options if o.startswith(option[:n])} == {flags._table()[0][option]}
    ]
    return [*unique, option]  # the whole option is itself, even where a longer one starts with it


def test_owned_flags_smuggled_the_table_knows_every_owned_knob():
    dests = {flags._table()[0][o] for o in OWNED_OPTIONS}
    assert {
        "max_model_len",
        "max_num_batched_tokens",
        "gpu_memory_utilization",
        "host",
        "port",
        "kv_cache_dtype",
        "compilation_config",
        "enforce_eager",
    } <= dests


@settings(max_examples=300, deadline=None)
@given(option=st.sampled_from(OWNED_OPTIONS), data=st.data())
def test_owned_flags_smuggled_prefix_underscore_and_value_spellings_are_all_refused(option, data):
    prefix = data.draw(st.sampled_from(_unique_prefixes(option)))
    spelled = data.draw(st.sampled_from([prefix, "--" + prefix[2:].replace("-", "_")]))
    flag = data.draw(st.sampled_from([spelled, spelled + "=1", spelled + "=x"]))
    with pytest.raises(InputError, match="owns"):
        VLLM.serve_argv(config(extra_flags=[flag]))


@pytest.mark.parametrize(
    "flag",
    [
        "--compilation-config.cudagraph_mode=FULL",
        "--compilation_config.level=3",
        "--compilation-c.mode=3",
        "--max_model_len=1",
        "--max-model=1",
        "--gpu-mem=0.99",
        "--no-enable-prefix-caching",
        "--no_enable_chunked=1",
        "--port=9",
        "--hos=0.0.0.0",
    ],
)
def test_owned_flags_smuggled_known_spellings_are_refused(flag):
    with pytest.raises(InputError, match="owns"):
        VLLM.serve_argv(config(extra_flags=[flag]))


def test_owned_flags_smuggled_an_ambiguous_prefix_is_refused_not_guessed():
    with pytest.raises(InputError, match="ambiguous"):
        VLLM.admit(config(extra_flags=["--max-num=1"]))
