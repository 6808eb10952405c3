"""Which known-good entry a run matches, as pure functions (policy/known_good.py): engine versions compared as
releases, the field an entry that exists but does not match differs in, and the knobs an entry recorded from a
run keeps (never a gate's pin)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from redline.models.known_good import Evidence, KnownGoodEntry
from redline.models.serve import ServeConfig
from redline.policy import known_good as kg


def entry(**changes: Any) -> KnownGoodEntry:
    fields: dict[str, Any] = {
        "model": "/models/tiny",
        "hardware": "cpu",
        "engine_version": "0.32.0",
        "model_config_hash": "a" * 64,
        "knobs": {"enforce_eager": True},
        "why": "eager on this host",
        "evidence": [Evidence(kind="note", ref="n.md")],
        "recorded_at": datetime(2026, 11, 1, tzinfo=UTC),
    }
    return KnownGoodEntry(**(fields | changes))


def run(**changes: Any) -> kg.Run:
    fields = {
        "model": "/models/tiny",
        "config_hash": "a" * 64,
        "hardware": "cpu",
        "engine": "vllm",
        "engine_version": "0.32.0+cpu",
    }
    return kg.Run(**(fields | changes))


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("0.32.0", "0.32.0+cpu", True),  # a local build suffix: the same release
        ("0.6.4.post1+cu124", "0.6.4.post1", True),
        ("0.32", "0.32.0", True),
        ("v0.32.0", "0.32.0", True),
        ("0.32.0", "0.32.1", False),
        ("0.32.0rc1", "0.32.0", False),  # a release candidate is another release
        ("0.32.0.dev3+g1234", "0.32.0.dev4+g1234", False),
        ("0.10.0", "0.1.0", False),
    ],
)
def test_engine_versions_are_compared_as_releases(a: str, b: str, same: bool) -> None:
    assert kg.same_release(a, b) is same


def test_an_entry_stored_from_the_boot_log_matches_the_cpu_builds_version_and_says_why() -> None:
    found = kg.find([entry()], run())
    assert found.entry == entry()
    assert (
        found.note
        == "engine version 0.32.0+cpu matched the entry's 0.32.0 (the local build suffix +cpu is the same release)"
    )
    assert kg.find([entry(engine_version="0.32.0+cpu")], run()).note == ""  # written the same: nothing to say
    assert kg.same_key(entry(), entry(engine_version="0.32.0+cpu"))  # one key: recorded in place


def test_an_entry_written_with_the_runs_own_version_wins() -> None:
    exact = entry(engine_version="0.32.0+cpu", why="the CPU build's own")
    assert kg.find([entry(), exact], run()).entry == exact


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"hardware": "NVIDIA H200"}, "hardware NVIDIA H200 (this run: cpu)"),
        ({"engine_version": "0.31.0"}, "engine version 0.31.0 (this run: 0.32.0+cpu)"),
        ({"model_config_hash": "b" * 64}, f"model hash {'b' * 12} (this model's config.json: {'a' * 12})"),
        ({"engine": "sglang"}, "engine sglang (this run: vllm)"),
    ],
)
def test_an_entry_that_exists_but_does_not_match_is_named_with_the_field(changes: dict[str, Any], said: str) -> None:
    miss = entry(**changes)
    found = kg.find([miss], run())
    assert found.entry is None
    assert found.note == f"{miss.key().describe()} differs in {said}"


def test_an_entry_of_another_model_is_not_named_and_a_hash_match_at_another_path_applies() -> None:
    assert kg.find([entry(model="/models/other", model_config_hash="c" * 64)], run()) == kg.Found(None, "")
    moved = entry(model="/elsewhere/tiny")  # the same config.json at another path
    assert kg.find([moved], run()).entry == moved


def test_an_entry_recorded_from_a_run_keeps_its_own_knobs_never_a_gates_pin() -> None:
    spec = ServeConfig(model="/models/tiny", max_model_len=4096, max_num_batched_tokens=8192)
    booted = spec.model_copy(update={"max_num_seqs": 4, "enforce_eager": True})  # the gate's pin; the entry's eager
    knobs, left = kg.run_knobs(booted, spec)
    assert knobs == {"max_model_len": 4096, "max_num_batched_tokens": 8192}
    assert left == ["enforce_eager True", "max_num_seqs 4"]
    knobs, left = kg.run_knobs(booted, spec, entry())  # the entry of its key had added enforce_eager: kept
    assert knobs["enforce_eager"] is True and left == ["max_num_seqs 4"]
    raised = spec.model_copy(update={"max_num_seqs": 2})  # the file set 2; the gate raised it to the top c
    assert kg.run_knobs(raised.model_copy(update={"max_num_seqs": 4}), raised)[1] == ["max_num_seqs 4"]
