"""`vllm serve` / `vllm bench serve` argv from typed configs, and the guards on what reaches them."""

import json

import pytest
from pydantic import ValidationError

from redline.engines import get_engine
from redline.engines.vllm import bench_argv, serve_argv
from redline.errors import InputError
from redline.models import BenchWorkload, ServeConfig


def test_minimal_config_gives_the_floor_command():
    config = ServeConfig(model="/models/m", max_model_len=32768, max_num_batched_tokens=8192)
    assert serve_argv(config) == [
        "vllm",
        "serve",
        "/models/m",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--max-model-len",
        "32768",
        "--max-num-batched-tokens",
        "8192",
        "--gpu-memory-utilization",
        "0.9",
    ]


@pytest.mark.parametrize(
    ("fields", "expected_tail"),
    [
        ({"enforce_eager": True}, ["--enforce-eager"]),
        ({"enable_chunked_prefill": False}, ["--no-enable-chunked-prefill"]),
        ({"enable_prefix_caching": True}, ["--enable-prefix-caching"]),
        ({"kv_cache_dtype": "fp8"}, ["--kv-cache-dtype", "fp8"]),
        ({"max_num_seqs": 64}, ["--max-num-seqs", "64"]),
        ({"tensor_parallel_size": 2}, ["--tensor-parallel-size", "2"]),
        ({"load_format": "dummy"}, ["--load-format", "dummy"]),
        ({"cudagraph_mode": "PIECEWISE"}, ["--compilation-config", json.dumps({"cudagraph_mode": "PIECEWISE"})]),
        ({"extra_flags": ["--trust-remote-code", "--seed=7"]}, ["--trust-remote-code", "--seed=7"]),
    ],
)
def test_each_knob_becomes_its_flag(fields, expected_tail):
    argv = serve_argv(ServeConfig(model="m", max_model_len=1024, **fields))
    assert argv[-len(expected_tail) :] == expected_tail


def test_executable_prefix_is_used_as_given():
    argv = serve_argv(ServeConfig(model="m", max_model_len=1024), executable=("/opt/venv/bin/vllm",))
    assert argv[:2] == ["/opt/venv/bin/vllm", "serve"]


@pytest.mark.parametrize("flag", ["; rm -rf /", "-x", "--foo bar", "--foo\n--bar", "rm", "--Foo", "$(reboot)"])
def test_extra_flags_reject_injection(flag):
    with pytest.raises(ValidationError, match="not an engine flag"):
        ServeConfig(model="m", max_model_len=1024, extra_flags=[flag])


def test_model_rejects_flag_injection():
    with pytest.raises(ValidationError, match="not starting with '-'"):
        ServeConfig(model="--enforce-eager", max_model_len=1024)


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "A;B", ""])
def test_env_names_must_be_names(name):
    with pytest.raises(ValidationError, match="environment variable name"):
        ServeConfig(model="m", max_model_len=1024, env={name: "1"})


def test_extra_flag_cannot_override_an_owned_knob():
    config = ServeConfig(model="m", max_model_len=1024, extra_flags=["--max-model-len=999999"])
    with pytest.raises(InputError, match="set that field instead"):
        serve_argv(config)


def test_bench_argv_pins_backend_and_targets_the_server():
    config = ServeConfig(model="/models/m", max_model_len=4096, port=8123)
    workload = BenchWorkload(input_len=3000, output_len=16, num_prompts=4, concurrency=2)
    argv = bench_argv(config, workload, result_dir="/tmp/r", result_filename="smoke.json")
    assert argv[:5] == ["vllm", "bench", "serve", "--backend", "vllm"]
    assert argv[argv.index("--base-url") + 1] == "http://127.0.0.1:8123"
    assert argv[argv.index("--num-prompts") + 1] == "4"
    assert "--save-result" in argv and "--ignore-eos" in argv


def test_health_url_of_a_wildcard_host_is_loopback():
    config = ServeConfig(model="m", max_model_len=8, host="0.0.0.0", port=9000)
    assert get_engine("vllm").health_url(config) == "http://127.0.0.1:9000/health"


def test_bench_argv_sends_the_seed_when_the_workload_has_one():
    config = ServeConfig(model="m", max_model_len=4096)
    argv = bench_argv(
        config,
        BenchWorkload(input_len=8, output_len=8, num_prompts=2, concurrency=1, seed=7),
        result_dir="/r",
        result_filename="r.json",
    )
    assert argv[argv.index("--seed") + 1] == "7"
    assert "--seed" not in bench_argv(
        config,
        BenchWorkload(input_len=8, output_len=8, num_prompts=2, concurrency=1),
        result_dir="/r",
        result_filename="r.json",
    )
