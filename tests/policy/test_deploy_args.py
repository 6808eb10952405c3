"""A champion's flags merged into a deploy's argument list (policy/deploy_args.py), the flags a config gives a deploy
(Engine.deploy_flags), the levers that risk the model's answers (policy/quality_risk.py), and a values file written
back with its own indentation and comments (ledger/yamlfile.parse_as_written): every line the merge did not edit is
the file's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger import yamlfile
from redline.models import ServeConfig
from redline.policy.deploy_args import Append, Delete, Replace, apply_edits, edit_line, is_option, merge_args, option
from redline.policy.quality_risk import quality_risks

VLLM = get_engine("vllm")
RESOLVE = VLLM.deploy_option


def merged(items: list[str], flags: list[str]) -> list[str]:
    out = list(items)
    apply_edits(out, merge_args(items, flags, RESOLVE))
    return out


def test_one_flag_is_one_option_in_any_spelling() -> None:
    assert option("--max_num_seqs=4") == option("--max-num-seqs") == "max-num-seqs"
    assert option("--no-enable-prefix-caching") == option("--enable-prefix-caching") == "enable-prefix-caching"
    assert option("256") is None and option("--") is None


def test_a_flag_takes_the_place_of_the_one_there_and_its_value_item_goes() -> None:
    items = ["--trust-remote-code", "--max-num-seqs", "256", "--max-model-len=8192"]
    edits = merge_args(items, ["--max-num-seqs=128", "--enable-chunked-prefill"], RESOLVE)
    assert edits == [
        Replace(1, "--max-num-seqs=128", "--max-num-seqs 256"),
        Delete(2, "256"),
        Append("--enable-chunked-prefill"),
    ]
    assert merged(items, ["--max-num-seqs=128", "--enable-chunked-prefill"]) == [
        "--trust-remote-code",
        "--max-num-seqs=128",
        "--max-model-len=8192",
        "--enable-chunked-prefill",
    ]


def test_a_flag_already_there_in_another_spelling_is_no_edit_and_a_negation_is_one() -> None:
    assert merge_args(["--max_num_seqs", "128"], ["--max-num-seqs=128"], RESOLVE) == []
    assert merged(["--enable-prefix-caching"], ["--no-enable-prefix-caching"]) == ["--no-enable-prefix-caching"]
    twice = ["--max-num-seqs=8", "--enforce-eager", "--max-num-seqs", "9"]  # a later copy would win: it goes too
    assert merged(twice, ["--max-num-seqs=8"]) == ["--max-num-seqs=8", "--enforce-eager"]


# Issue 38, item 4: every item of the list is resolved as the engine's parser resolves it, so a spelling argparse
# accepts (a prefix, an alias, underscores, `--flag value` or `--flag=value`) cannot keep a value the champion replaces
SPELLINGS = [
    (["--max-num-batched-tokens=2048", "--max-num-batched=2048"], "--max-num-batched-tokens=8192"),
    (["--max-num-batched-tokens", "2048", "--max_num_batched", "2048"], "--max-num-batched-tokens=8192"),
    (["--max-num-b=2048"], "--max-num-batched-tokens=8192"),
    (["-tp", "4", "--enforce-eager"], "--tensor-parallel-size=2"),
    (["-tp=4"], "--tensor-parallel-size=2"),
    (["--tensor_parallel_size=4", "-tp", "4"], "--tensor-parallel-size=2"),
    (["--no-enable-prefix", "--enable-prefix-caching"], "--enable-prefix-caching"),
    (["--compilation-config.cudagraph_mode=PIECEWISE"], '--compilation-config={"cudagraph_mode": "FULL"}'),
]


@pytest.mark.parametrize(("items", "flag"), SPELLINGS)
def test_deploy_spellings_every_item_landing_on_an_option_the_champion_sets_is_replaced(
    items: list[str], flag: str
) -> None:
    dest = RESOLVE(flag)[0]
    after = merged(items, [flag])
    assert after.count(flag) == 1
    left = [item for item in after if is_option(item) and RESOLVE(item)[0] == dest]
    assert left == [flag], after  # no other spelling of the option is left to win at the engine
    assert all(not item.isdigit() for item in after), after  # no value item is left behind either
    kept = [item for item in items if is_option(item) and RESOLVE(item)[0] != dest]
    assert [item for item in after if item != flag] == kept


def test_deploy_spellings_the_dry_run_names_each_item_it_removes() -> None:
    edits = merge_args(
        ["--max-num-batched-tokens=2048", "--max-num-batched=2048"], ["--max-num-batched-tokens=8192"], RESOLVE
    )
    assert [edit_line(e) for e in edits] == [
        "--max-num-batched-tokens=2048 -> --max-num-batched-tokens=8192",
        "- --max-num-batched=2048 (item 1)",
    ]


@pytest.mark.parametrize(
    ("item", "words"),
    [("--max-num=2048", "ambiguous"), ("--no-such-flag", "is not a `vllm serve` option"), ("-zz", "no option")],
)
def test_deploy_spellings_an_item_no_one_option_answers_to_is_refused_naming_it(item: str, words: str) -> None:
    with pytest.raises(InputError) as refused:
        merge_args(["--enforce-eager", item], ["--max-num-batched-tokens=8192"], RESOLVE)
    said = str(refused.value)
    assert said.startswith(f"the deploy's argument list holds {item!r} (item 1), which redline cannot resolve"), said
    assert words in said and "cannot tell whether it sets what the champion sets" in said


def test_deploy_spellings_values_and_negative_numbers_are_not_options() -> None:
    assert merged(["--seed", "-1", "/models/m"], ["--max-num-seqs=8"]) == [
        "--seed",
        "-1",
        "/models/m",
        "--max-num-seqs=8",
    ]
    assert merged(["--enforce-eager", "/models/m"], ["--max-num-seqs=8"]) == [
        "--enforce-eager",
        "/models/m",
        "--max-num-seqs=8",
    ]


def test_a_vllm_config_gives_a_deploy_its_levers_never_its_model_port_or_load_format() -> None:
    config = ServeConfig(
        model="/models/m",
        max_model_len=8192,
        max_num_batched_tokens=4096,
        port=8123,
        load_format="dummy",
        enable_prefix_caching=False,
        cudagraph_mode="FULL",
    )
    flags, left = get_engine("vllm").deploy_flags(config)
    assert "--max-model-len=8192" in flags and "--max-num-batched-tokens=4096" in flags
    assert "--no-enable-prefix-caching" in flags and '--compilation-config={"cudagraph_mode": "FULL"}' in flags
    assert not any(f.startswith(("--port", "--host", "--load-format")) or "/models/m" in f for f in flags)
    assert left == [f"--host={config.host}", "--port=8123", "--load-format=dummy"]
    flags, left = get_engine("sglang").deploy_flags(config.model_copy(update={"cudagraph_mode": None}))
    assert "--context-length=8192" in flags and "--model-path=/models/m" in left


@pytest.mark.parametrize(
    ("champion", "baseline", "risks"),
    [
        ({"kv_cache_dtype": "fp8"}, {}, ["kv_cache_dtype fp8"]),
        ({"kv_cache_dtype": "fp8"}, {"kv_cache_dtype": "fp8"}, []),  # the baseline took that risk already
        ({"extra_flags": ["--quantization=fp8"]}, {}, ["--quantization=fp8"]),
        (
            {"extra_flags": ['--speculative-config={"method": "ngram"}']},
            {},
            ['--speculative-config={"method": "ngram"}'],
        ),
        ({"max_num_seqs": 8}, {}, []),
        ({"model": "/m-FP8"}, {}, ["model /m-FP8"]),  # another checkpoint: a quantized copy's answers to check
    ],
)
def test_a_lever_that_risks_the_answers_is_named_against_the_baseline(
    champion: dict[str, object], baseline: dict[str, object], risks: list[str]
) -> None:
    base = ServeConfig(model="/m", max_model_len=4096)
    assert quality_risks(base.model_copy(update=champion), base.model_copy(update=baseline)) == risks


VALUES = {
    "offset-2": """\
# the deploy bundle's values (a person's file)
image:
  tag: v0.26.0   # pinned
vllm:
  model: meta-llama/Llama-3.1-8B-Instruct
  extraArgs:
    - --max-model-len=8192   # the ladder's ceiling
    - --max-num-seqs
    - "256"
    - --trust-remote-code
  resources:
    limits: {nvidia.com/gpu: 1}
""",
    "offset-0": """\
vllm:
    extraArgs:
    - --max-num-seqs=256
    # kept as written
    - --trust-remote-code
    env: []
""",
}


@pytest.mark.parametrize("style", sorted(VALUES))
def test_a_values_file_is_written_back_with_its_own_indentation_and_comments(tmp_path: Path, style: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(VALUES[style])
    doc, dump = yamlfile.parse_as_written(yamlfile.read(path), str(path))
    args = doc["vllm"]["extraArgs"]
    apply_edits(args, merge_args(list(args), ["--max-num-seqs=128", "--enable-chunked-prefill"], RESOLVE))
    after = dump(doc)
    before_lines, after_lines = VALUES[style].splitlines(), after.splitlines()
    kept = [line for line in before_lines if "max-num-seqs" not in line and line.strip() != '- "256"']
    assert [line for line in after_lines if "max-num-seqs" not in line and "chunked" not in line] == kept
    assert sum("--max-num-seqs=128" in line for line in after_lines) == 1
    assert sum("--enable-chunked-prefill" in line for line in after_lines) == 1
