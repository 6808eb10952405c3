"""Issue 19, class 5: sub-keys of JSON-valued levers pass an allowlist per lever (engines/json_levers.py).

A draft model, its revision, code revision, tokenizer or download folder, given as a sub-key of
`--speculative-config` in any spelling (dotted, whole JSON, nested JSON, prefix or underscores), is refused
as its own top-level flag is, naming the sub-key; a lever that is not JSON-valued takes no sub-key and no
JSON object, on both engines.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engines import get_engine
from redline.engines.vllm.flags import JSON_LEVERS
from redline.errors import InputError
from redline.models import ServeConfig, Widening

VLLM = get_engine("vllm")
SGLANG = get_engine("sglang")


def admit(engine: str, *flags: str, widening: Widening | None = None) -> list[str]:
    return get_engine(engine).admit(ServeConfig(model="/m", max_model_len=4096, extra_flags=list(flags)), widening)


# sub-key -> the words its refusal must say (the reason its own top-level flag has, where it has one)
REFUSED_SUBKEYS = {
    "model": "names a draft model",
    "revision": "where the model's code or files come from",
    "code_revision": "where the model's code or files come from",
    "tokenizer": "where the model's code or files come from",
    "tokenizer_revision": "where the model's code or files come from",
    "download_dir": "reads or writes a path on the host",
    "trust_remote_code": "runs the model repository's own Python code",
    "draft_load_config": "reads or writes a path on the host",
    "hf_overrides": "where the model's code or files come from",
    "enforce_eager": "graph regime",
    "max_model_len": "not a sub-key redline allows",
    "no_such_key": "not a sub-key redline allows",
}


def spellings(key: str, value: object) -> list[str]:
    """The ways vLLM reads speculative_config's `key`: dotted, whole JSON, nested under an allowed key's
    neighbour, with a prefix and underscores for the flag."""
    text = json.dumps(value)
    return [
        f"--speculative-config.{key}={value if isinstance(value, str) else text}",
        f"--speculative_config.{key}={text}",
        f"--speculative.{key}={text}",
        f"--speculative-config={json.dumps({'method': 'ngram', key: value})}",
        f"--speculative-config={json.dumps({key: value, 'num_speculative_tokens': 3})}",
    ]


@pytest.mark.parametrize(("key", "why"), sorted(REFUSED_SUBKEYS.items()))
def test_json_lever_subkeys_a_refused_subkey_is_refused_in_every_spelling_naming_it(key: str, why: str) -> None:
    for flag in spellings(key, "/etc/evil"):
        with pytest.raises(InputError) as refused:
            admit("vllm", flag)
        message = str(refused.value)
        assert f"(speculative_config.{key})" in message and why in message, (flag, message)


def test_json_lever_subkeys_are_refused_as_their_own_top_level_flags_are() -> None:
    for key, own in (
        ("revision", "--revision=x"),
        ("download_dir", "--download-dir=/x"),
        ("tokenizer", "--tokenizer=x"),
    ):
        with pytest.raises(InputError) as top:
            admit("vllm", own)
        with pytest.raises(InputError) as sub:
            admit("vllm", f"--speculative-config.{key}=x")
        reason = str(top.value).split("is refused: it ", 1)[1].split(";", 1)[0]
        assert f"is refused: it {reason}" in str(sub.value), (key, str(sub.value))


def test_json_lever_subkeys_nested_json_is_judged_at_every_depth() -> None:
    for flag in (
        '--speculative-config={"method": "ngram", "draft_load_config": {"download_dir": "/x"}}',
        '--speculative-config.draft_load_config={"download_dir": "/x"}',
        "--speculative-config.draft_load_config.download_dir=/x",
        '--limit-mm-per-prompt={"image": {"count": 2, "path": "/etc/passwd"}}',
        "--limit-mm-per-prompt.image.path=/etc/passwd",
        '--speculative-config={"method": {"model": "/etc/evil"}}',
        '--speculative-config={"num_speculative_tokens_per_batch_size": [{"model": "/x"}]}',
        '--speculative-config={"method": ["ngram", {"model": "/x"}]}',
        '--attention-config={"backend": "FLASH_ATTN", "m\\u006fdel": "/x"}',  # JSON escapes: the key is `model`
    ):
        with pytest.raises(InputError, match=r"is refused: ") as refused:
            admit("vllm", flag)
        assert (
            "(speculative_config." in str(refused.value)
            or "(limit_mm_per_prompt." in str(refused.value)
            or ("(attention_config.model)" in str(refused.value))
        ), str(refused.value)


def test_json_lever_subkeys_the_allowlist_passes_in_both_spellings() -> None:
    assert (
        admit(
            "vllm",
            '--speculative-config={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}',
            "--speculative-config.prompt_lookup_min=2",
            "--attention-config.backend=FLASH_ATTN",
            '--eplb-config={"window_size": 1000, "step_interval": 3000}',
            '--limit-mm-per-prompt={"image": {"count": 2, "width": 512}, "video": 0}',
        )
        == []
    )


def test_json_lever_subkeys_a_json_lever_takes_an_object_and_a_subkey_its_value() -> None:
    with pytest.raises(InputError, match="takes a JSON object of method"):
        admit("vllm", "--speculative-config=/etc/evil")
    with pytest.raises(InputError, match="a sub-key needs its value"):
        admit("vllm", "--speculative-config.method")  # vLLM would take the next argument as its value
    with pytest.raises(InputError, match=r"\(speculative_config.method\) is refused: .* takes a value, not a JSON"):
        admit("vllm", "--speculative-config.method.model=/etc/evil")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_json_lever_subkeys_a_lever_that_is_not_json_valued_takes_no_subkey_and_no_object(engine: str) -> None:
    lever = "--seed" if engine == "vllm" else "--random-seed"
    with pytest.raises(InputError, match=r"takes a value, not a JSON object"):
        admit(engine, f'{lever}={{"model": "/etc/evil"}}')
    with pytest.raises(InputError, match="takes no sub-keys" if engine == "vllm" else "no dotted sub-keys"):
        admit(engine, f"{lever}.model=/etc/evil")
    assert admit(engine, f"{lever}=7") == []


def test_json_lever_subkeys_sglang_refuses_the_draft_in_every_spelling() -> None:
    for flag in (
        "--speculative-draft-model-path=/etc/evil",
        "--speculative-draft-model-revision=x",
        '--speculative-algorithm={"model": "/etc/evil"}',
        "--speculative-algorithm.model=/etc/evil",
        '--speculative-num-steps={"draft": "/etc/evil"}',
    ):
        with pytest.raises(InputError, match="refused|not a .* option as written"):
            admit("sglang", flag)


def test_json_lever_subkeys_the_two_argument_spelling_is_refused_before_any_table() -> None:
    """`--speculative-config '{json}'` as two extra flags: the second is no flag, so the serve config refuses it."""
    with pytest.raises(ValueError, match="is not an engine flag"):
        ServeConfig(model="/m", max_model_len=4096, extra_flags=["--speculative-config", '{"model": "/etc/evil"}'])


def test_json_lever_subkeys_a_widening_never_frees_a_subkey() -> None:
    with pytest.raises(InputError, match=r"\(speculative_config.model\) is refused"):
        admit("vllm", "--speculative-config.model=/x", widening=Widening(flags=["--speculative-config"]))


# generated: any sub-key path under any JSON lever, in either spelling, refused by name unless allowed
subkey = st.one_of(st.sampled_from(sorted(REFUSED_SUBKEYS)), st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True))


def allowed(lever: str, path: list[str]) -> bool:
    node: object = JSON_LEVERS[lever]
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(JSON_LEVERS)), st.lists(subkey, min_size=1, max_size=3), st.booleans())
def test_json_lever_subkeys_generated_paths_are_refused_by_name_unless_allowed(
    lever: str, path: list[str], dotted: bool
) -> None:
    value: object = "/etc/evil"
    nested: object = value
    for key in reversed(path):
        nested = {key: nested}
    flag_name = "--" + lever.replace("_", "-")
    flag = f"{flag_name}.{'.'.join(path)}={value}" if dotted else f"{flag_name}={json.dumps(nested)}"
    if allowed(lever, path):
        assert admit("vllm", flag) == []
        return
    with pytest.raises(InputError) as refused:
        admit("vllm", flag)
    assert f"({lever}." in str(refused.value) and "is refused" in str(refused.value), str(refused.value)
