"""SGLang's allowlist over its real flag table (engines/sglang/data/serve-flags.json, read from 0.5.17's
srt/server_args.py): code-loading flags refused with the reason, owned knobs refused in any spelling."""

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import redline.engines.sglang
from redline.engines import get_engine
from redline.engines.sglang import flags
from redline.errors import InputError
from redline.models import ServeConfig, Widening

SGLANG = get_engine("sglang")
TABLE = flags.TABLE
DATA = Path(redline.engines.sglang.__file__).parent / "data"


def config(**knobs) -> ServeConfig:
    return ServeConfig(model="/models/m", max_model_len=4096, **knobs)


# ---- the table ------------------------------------------------------------------------------------------


def test_the_table_is_sglang_0_5_17_s_and_knows_the_flags_redline_emits():
    assert TABLE.options  # read lazily from the package data
    assert "sglang 0.5.17" in (DATA / "serve-flags.json").read_text()[:200]
    for option, dest in [
        ("--model-path", "model_path"),
        ("--model", "model_path"),
        ("--context-length", "context_length"),
        ("--chunked-prefill-size", "chunked_prefill_size"),
        ("--tp-size", "tp_size"),
        ("--tensor-parallel-size", "tp_size"),
        ("--disable-cuda-graph", "disable_cuda_graph"),
        ("--cuda-graph-backend-decode", "cuda_graph_backend_decode"),
        ("--config", "config"),
    ]:
        assert TABLE.options[option] == dest
    assert "--disable-radix-cache" not in TABLE.takes_value and "--context-length" in TABLE.takes_value


def test_every_judged_option_is_in_the_table_and_judged_once():
    dests = set(TABLE.options.values())
    judged = [flags.OWNED, flags.LEVERS, frozenset(flags.REFUSED)]
    assert all(group <= dests for group in judged)
    assert not (flags.OWNED & flags.LEVERS or flags.OWNED & judged[2] or flags.LEVERS & judged[2])


def test_the_table_reader_reads_fields_aliases_bools_and_manual_arguments():
    spec = importlib.util.spec_from_file_location("read_flags", DATA / "read_flags.py")
    reader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reader)
    source = """
class ServerArgs:
    model_path: A[str, Arg(help="x", aliases=["--model"]), NS("model")]
    tp_size: A[int, Arg(help="x", cli_name="--tp-size", aliases=["--tensor-parallel-size"])] = 1
    trust_remote_code: A[bool, "x", NS("model")] = False
    enable_x: A[Optional[bool], "x"] = None
    lora: A[bool, Arg(help="x", action=argparse.BooleanOptionalAction)] = False
    hidden: A[bool, Arg(no_cli=True)] = False
    internal: A[int, NS("x")] = 0
    plain: int = 0

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--config", type=str)
        parser.add_argument("--disable-cuda-graph", action=DeprecatedStoreTrueAction, new_flag="x")
        parser.add_argument("--cuda-graph-max-bs", type=int, action=DeprecatedAliasStoreAction, dest="max_bs")
"""
    table, takes = reader.read_server_args(source)
    assert table == {
        "--model-path": "model_path",
        "--model": "model_path",
        "--tp-size": "tp_size",
        "--tensor-parallel-size": "tp_size",
        "--trust-remote-code": "trust_remote_code",
        "--enable-x": "enable_x",
        "--lora": "lora",
        "--no-lora": "lora",
        "--config": "config",
        "--disable-cuda-graph": "disable_cuda_graph",
        "--cuda-graph-max-bs": "max_bs",
    }
    assert takes == {
        "--model-path",
        "--model",
        "--tp-size",
        "--tensor-parallel-size",
        "--config",
        "--cuda-graph-max-bs",
    }


# ---- code execution and reach through knobs ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "why"),
    [
        ("--trust-remote-code", "runs the model repository's own Python code"),
        ("--enable-custom-logit-processor", "serialized Python logit processors"),
        ("--custom-weight-loader=evil.load", "loads Python code"),
        ("--forward-hooks=x", "loads Python code"),
        ("--config=/tmp/more-flags.yaml", "reads or writes a path on the host"),
        ("--chat-template=/etc/shadow", "reads or writes a path on the host"),
        ("--delete-ckpt-after-loading", "deletes the model's files"),
        ("--dist-init-addr=10.0.0.1:5000", "connects the server to other hosts"),
        ("--api-key=x", "changes who can reach the server"),
        ("--tokenizer-path=/elsewhere", "changes where the model's code or files come from"),
        ("--served-model-name=m", "the bench client asks for it by its path"),
        ("--skip-server-warmup", "a boot proves less"),
    ],
)
def test_flags_that_load_code_read_files_or_open_the_server_are_refused_with_the_reason(flag, why):
    with pytest.raises(InputError, match=why):
        SGLANG.admit(config(extra_flags=[flag]))


def test_a_flag_that_is_no_lever_or_no_option_is_refused():
    with pytest.raises(InputError, match="not a serving lever redline allows"):
        SGLANG.admit(config(extra_flags=["--enable-memory-saver"]))
    with pytest.raises(InputError, match="is not a `python -m sglang.launch_server` option"):
        SGLANG.admit(config(extra_flags=["--no-such-flag=1"]))


def test_serving_levers_pass():
    levers = [
        "--attention-backend=fa3",
        "--page-size=16",
        "--max-prefill-tokens=16384",
        "--cuda-graph-max-bs-decode=64",
        "--schedule-policy=lpm",
        "--enable-torch-compile",
        "--random-seed=7",
    ]
    assert SGLANG.admit(config(extra_flags=levers)) == []


def test_an_underscore_or_dotted_spelling_of_a_lever_is_refused_as_sglang_would_refuse_it():
    with pytest.raises(InputError, match="as written.*--attention-backend=fa3"):
        SGLANG.admit(config(extra_flags=["--attention_backend=fa3"]))
    with pytest.raises(InputError, match="as written"):
        SGLANG.admit(config(extra_flags=["--page-size.x=16"]))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("LD_PRELOAD", "loader or the interpreter"),
        ("PYTHONPATH", "loader or the interpreter"),
        ("SGLANG_PLUGINS", "loader or the interpreter"),
        ("SGLANG_EXTERNAL_MODEL_PACKAGE", "loader or the interpreter"),
        ("SGLANG_LOGGING_CONFIG_PATH", "loader or the interpreter"),
        ("HF_ENDPOINT", "where code and files come from"),
        ("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "what the health check"),
        ("VLLM_ATTENTION_BACKEND", "not an engine"),
    ],
)
def test_env_that_changes_what_code_runs_or_what_a_check_proves_is_refused(name, why):
    with pytest.raises(InputError, match=why):
        SGLANG.admit(config(env={name: "x"}))


def test_sglang_s_tuning_env_and_the_long_context_switch_pass():
    env = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "SGLANG_LOG_MS": "1", "OMP_NUM_THREADS": "8"}
    assert SGLANG.admit(config(env=env)) == []


def test_a_widening_allows_on_purpose_says_what_it_used_and_names_sglang():
    widening = Widening(flags=["--trust-remote-code"], env=["SGLANG_PLUGINS"])
    used = SGLANG.admit(config(extra_flags=["--trust-remote-code"], env={"SGLANG_PLUGINS": "x"}), widening)
    assert used == ["flag --trust-remote-code (trust_remote_code)", "env SGLANG_PLUGINS"]
    with pytest.raises(InputError, match=r"widen: sglang: flags:"):
        SGLANG.admit(config(extra_flags=["--trust-remote-code"]))


# ---- owned knobs smuggled in another spelling -------------------------------------------------------------

OWNED_OPTIONS = sorted(o for o, dest in TABLE.options.items() if dest in flags.OWNED)


def _unique_prefixes(option: str) -> list[str]:
    options = TABLE.options
    unique = [
        option[:n]
        for n in range(3, len(option))
        if {options[o] for o in options if o.startswith(option[:n])} == {options[option]}
    ]
    return [*unique, option]


def test_the_owned_options_cover_every_serve_config_knob_sglang_has():
    dests = {TABLE.options[o] for o in OWNED_OPTIONS}
    assert {
        "model_path",
        "context_length",
        "chunked_prefill_size",
        "mem_fraction_static",
        "host",
        "port",
        "kv_cache_dtype",
        "cuda_graph_backend_decode",
        "disable_cuda_graph",
        "disable_radix_cache",
        "max_running_requests",
        "tp_size",
        "dp_size",
        "pp_size",
        "load_format",
    } <= dests


@settings(max_examples=300, deadline=None)
@given(option=st.sampled_from(OWNED_OPTIONS), data=st.data())
def test_prefix_underscore_and_value_spellings_of_an_owned_knob_are_all_refused_as_owned(option, data):
    prefix = data.draw(st.sampled_from(_unique_prefixes(option)))
    spelled = data.draw(st.sampled_from([prefix, "--" + prefix[2:].replace("-", "_")]))
    flag = data.draw(st.sampled_from([spelled, spelled + "=1", spelled + "=x"]))
    with pytest.raises(InputError, match="owns"):
        SGLANG.serve_argv(config(extra_flags=[flag]))


@pytest.mark.parametrize(
    "flag",
    [
        "--tp=2",
        "--tensor-parallel-size=2",
        "--context_length=1",
        "--context-len=9",
        "--model=/other",
        "--mem-frac=0.99",
        "--disable-cuda-graph",
        "--disable-decode-cuda-graph",
        "--cuda-graph-backend-prefill=full",
        "--cuda-graph-config={}",
        "--disable-radix",
        "--max-running-requests=9",
        "--port=9",
        "--chunked-prefill-size.x=1",
    ],
)
def test_known_spellings_of_owned_knobs_are_refused(flag):
    with pytest.raises(InputError, match="owns"):
        SGLANG.serve_argv(config(extra_flags=[flag]))


def test_an_ambiguous_prefix_is_refused_not_guessed():
    with pytest.raises(InputError, match="ambiguous: SGLang would read it"):
        SGLANG.admit(config(extra_flags=["--enable-d=1"]))


def test_a_widening_never_frees_an_owned_knob():
    with pytest.raises(InputError, match="owns"):
        SGLANG.admit(config(extra_flags=["--context-length=9"]), Widening(flags=["--context-length"]))
