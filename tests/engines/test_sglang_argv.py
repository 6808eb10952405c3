"""The SGLang argv, as a table: each ServeConfig knob and the SGLang 0.5.17 flags it becomes, or its refusal by name.

Every argv is also parsed by a parser built from engines/sglang/data/serve-flags.json (SGLang's own option
table), so a flag SGLang lacks, or a value where SGLang takes none, fails here rather than at a boot.
"""

import argparse

import pytest

from redline.engines import get_engine
from redline.engines.sglang import flags
from redline.errors import InputError
from redline.models import BenchWorkload, ServeConfig

SGLANG = get_engine("sglang")
BASE = [
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "/models/m",
    "--host",
    "127.0.0.1",
    "--port",
    "8000",
    "--context-length",
    "4096",
    "--mem-fraction-static",
    "0.9",
]


def config(**knobs) -> ServeConfig:
    return ServeConfig(model="/models/m", max_model_len=4096, **knobs)


def sglang_parser() -> argparse.ArgumentParser:
    """argparse as SGLang builds it (plain, allow_abbrev), from the option table: a value where the table says so."""
    parser = argparse.ArgumentParser(prog="sglang serve", exit_on_error=False, add_help=False)
    by_dest: dict[str, list[str]] = {}
    for option, dest in flags.TABLE.options.items():
        by_dest.setdefault(f"{dest}|{option in flags.TABLE.takes_value}", []).append(option)
    for key, options in by_dest.items():
        dest, value = key.split("|")
        if value == "True":
            parser.add_argument(*options, dest=dest)
        else:
            parser.add_argument(*options, dest=dest, action="store_true")
    return parser


def parsed(argv: list[str]) -> argparse.Namespace:
    args, unknown = sglang_parser().parse_known_args(argv[3:])
    assert unknown == []
    return args


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        ({}, []),
        ({"max_num_batched_tokens": 8192}, ["--chunked-prefill-size", "8192"]),
        ({"gpu_memory_utilization": 0.85}, "--mem-fraction-static 0.85"),
        ({"kv_cache_dtype": "fp8_e4m3"}, ["--kv-cache-dtype", "fp8_e4m3"]),
        (
            {"enforce_eager": True},
            ["--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled"],
        ),
        ({"enable_chunked_prefill": True, "max_num_batched_tokens": 2048}, ["--chunked-prefill-size", "2048"]),
        ({"enable_chunked_prefill": False}, ["--chunked-prefill-size", "-1"]),
        ({"enable_prefix_caching": False}, ["--disable-radix-cache"]),
        ({"enable_prefix_caching": True}, []),  # the radix cache is SGLang's default
        ({"max_num_seqs": 64}, ["--max-running-requests", "64"]),
        ({"tensor_parallel_size": 2}, ["--tp-size", "2"]),
        ({"data_parallel_size": 2}, ["--dp-size", "2"]),
        ({"pipeline_parallel_size": 2}, ["--pp-size", "2"]),
        ({"load_format": "dummy"}, ["--load-format", "dummy"]),
        ({"host": "0.0.0.0", "port": 30000}, "--host 0.0.0.0 --port 30000"),
        ({"extra_flags": ["--attention-backend=fa3", "--page-size=16"]}, ["--attention-backend=fa3", "--page-size=16"]),
    ],
)
def test_each_knob_becomes_sglang_s_own_flag(knobs, expected):
    argv = SGLANG.serve_argv(config(**knobs))
    if isinstance(expected, str):
        assert expected in " ".join(argv)
    elif not expected:
        assert argv == BASE
    else:  # the base flags, and these in this order, nothing else
        assert " ".join(expected) in " ".join(argv) and len(argv) == len(BASE) + len(expected)
    parsed(argv)


def test_the_whole_argv_parses_against_sglang_s_table_to_the_right_dests():
    c = config(
        max_num_batched_tokens=8192,
        kv_cache_dtype="fp8_e5m2",
        enforce_eager=True,
        enable_prefix_caching=False,
        max_num_seqs=8,
        tensor_parallel_size=2,
        load_format="dummy",
        gpu_memory_utilization=0.88,
    )
    args = parsed(SGLANG.serve_argv(c))
    assert (args.model_path, args.context_length, args.chunked_prefill_size, args.mem_fraction_static) == (
        "/models/m",
        "4096",
        "8192",
        "0.88",
    )
    assert (args.cuda_graph_backend_decode, args.cuda_graph_backend_prefill) == ("disabled", "disabled")
    assert (args.disable_radix_cache, args.max_running_requests, args.tp_size) == (True, "8", "2")


def test_the_executable_is_the_host_s():
    argv = SGLANG.serve_argv(config(), ["/opt/sgl/bin/python", "-m", "sglang.launch_server"])
    assert argv[:3] == ["/opt/sgl/bin/python", "-m", "sglang.launch_server"]
    assert SGLANG.serve_argv(config(), ["sglang", "serve"])[:3] == ["sglang", "serve", "--model-path"]


@pytest.mark.parametrize(
    ("knobs", "refusal"),
    [
        ({"cudagraph_mode": "FULL_AND_PIECEWISE"}, "cudagraph_mode 'FULL_AND_PIECEWISE' is vLLM's: SGLang has no"),
        ({"enable_chunked_prefill": False, "max_num_batched_tokens": 8192}, "SGLang has one knob for both"),
        ({"kv_cache_dtype": "fp8"}, "vLLM's fp8 is SGLang's fp8_e4m3"),
        ({"load_format": "tensorizer"}, "load_format 'tensorizer' is not one SGLang 0.5.17 takes"),
    ],
)
def test_a_knob_sglang_lacks_is_refused_by_name_never_dropped(knobs, refusal):
    with pytest.raises(InputError, match=refusal.replace("(", r"\(").replace(")", r"\)")):
        SGLANG.serve_argv(config(**knobs))


def test_the_bench_is_vllm_s_client_with_the_openai_backend_and_the_model_s_own_tokenizer():
    w = BenchWorkload(input_len=1000, output_len=100, concurrency=4, num_prompts=8, seed=3)
    argv = SGLANG.bench_argv(config(port=30000, host="0.0.0.0"), w, result_dir="/runs/r1", result_filename="b.json")
    assert argv[:3] == ["vllm", "bench", "serve"]  # by default vLLM's client from PATH
    assert SGLANG.bench_client == "vllm"
    named = SGLANG.bench_argv(config(), w, result_dir="/r", result_filename="b.json", executable=["/opt/v/bin/vllm"])
    assert named[:3] == ["/opt/v/bin/vllm", "bench", "serve"]  # how the target runs that client
    assert argv[argv.index("--backend") + 1] == "openai"
    assert argv[argv.index("--base-url") + 1] == "http://127.0.0.1:30000"
    assert argv[argv.index("--tokenizer") + 1] == "/models/m" == argv[argv.index("--model") + 1]
    assert {"--ignore-eos", "--save-result"} <= set(argv)
    assert argv[argv.index("--random-input-len") + 1] == "1000" and argv[argv.index("--seed") + 1] == "3"


def test_both_engines_are_benched_by_the_same_client_with_the_same_workload_flags():
    w = BenchWorkload(input_len=1000, output_len=100, concurrency=4, num_prompts=8)
    vllm = get_engine("vllm").bench_argv(config(), w, result_dir="/r", result_filename="b.json")
    sglang = SGLANG.bench_argv(config(), w, result_dir="/r", result_filename="b.json")
    assert sglang[:3] == vllm[:3] == ["vllm", "bench", "serve"]
    assert set(sglang) ^ set(vllm) == {"openai", "--tokenizer"}  # the backend's name and the tokenizer, nothing else


def test_the_bench_result_is_read_by_the_vllm_reader_and_keeps_its_backend():
    text = (
        '{"backend": "openai", "model_id": "/models/m", "num_prompts": 2, "completed": 2, "failed": 0, '
        '"duration": 1.5, "max_concurrency": 1}'
    )
    result = SGLANG.parse_bench_result(text)
    assert (result.backend, result.all_completed) == ("openai", True)


def test_the_version_command_follows_the_engine_command():
    assert SGLANG.version_argv()[:2] == ["python3", "-c"]
    assert SGLANG.version_argv(["/opt/py", "-m", "sglang.launch_server"])[0] == "/opt/py"
    assert SGLANG.version_argv(["sglang", "serve"]) == ["sglang", "version"]
    with pytest.raises(InputError, match="cannot tell how"):
        SGLANG.version_argv(["/usr/local/bin/sgl-wrapper"])


def test_the_engine_s_facts():
    assert (SGLANG.name, SGLANG.title, SGLANG.health_path) == ("sglang", "SGLang", "/health")
    assert SGLANG.long_context_env == "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    assert SGLANG.pool_bounds_context is True and get_engine("vllm").pool_bounds_context is False
    assert SGLANG.bench_client == get_engine("vllm").bench_client == "vllm"
    assert SGLANG.health_url(config(host="0.0.0.0", port=30000)) == "http://127.0.0.1:30000/health"
