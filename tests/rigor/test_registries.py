"""known-good.yml and baselines.yml: ruamel round-trips that keep a person's comments, upserts by key, lookups,
a ladder's ceiling as an entry in one call, and how an entry is applied (policy/known_good.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from redline.errors import InputError
from redline.models.known_good import Evidence, KnownGoodEntry
from redline.models.serve import ServeConfig
from redline.ops.evidence.baseline import perf_baseline_diff, perf_baseline_record, read_baselines
from redline.ops.evidence.known_good import known_good_list, known_good_lookup, known_good_record
from redline.ops.evidence.known_good_apply import Identity, apply_known_good, registry_path
from redline.ops.requests_evidence import (
    KnownGoodListRequest,
    KnownGoodLookupRequest,
    KnownGoodRecordRequest,
    PerfBaselineDiffRequest,
    PerfBaselineRecordRequest,
)
from redline.policy import known_good as kg
from tests.conftest import DATA, H200
from tests.rigor.helpers import context

LADDER = DATA / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"
GDN = KnownGoodRecordRequest(
    model="/models/qwen3-next",
    hardware="NVIDIA H200",
    engine_version="0.26.0",
    flags=["--gdn-prefill-backend=triton"],
    knobs={"enforce_eager": True},
    why="the default GDN prefill kernel crashes at c >= 64",
    evidence=[Evidence(kind="note", ref="notes/gdn.md")],
)


def test_a_record_creates_the_file_with_its_header_and_comments_survive_an_update(tmp_path: Path) -> None:
    first = known_good_record(tmp_path, GDN)
    path = registry_path(tmp_path)
    text = path.read_text()
    assert not first.replaced and text.startswith("# redline known-good registry")
    # a person annotates the file by hand
    text = text.replace(
        "  - model: /models/qwen3-next", "  # keep: found the hard way on 2026-11-02\n  - model: /models/qwen3-next"
    )
    path.write_text(text)
    second = known_good_record(tmp_path, GDN.model_copy(update={"why": "crashes at c >= 32"}))
    after = path.read_text()
    assert second.replaced and "# keep: found the hard way on 2026-11-02" in after
    assert "crashes at c >= 32" in after and after.count("- model:") == 1
    other = known_good_record(tmp_path, GDN.model_copy(update={"engine_version": "0.27.0"}))
    assert not other.replaced and len(known_good_list(tmp_path, KnownGoodListRequest()).entries) == 2
    assert "# keep: found the hard way on 2026-11-02" in path.read_text()


def test_lookup_by_key_and_by_config_hash_at_another_path(tmp_path: Path) -> None:
    model = tmp_path / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(H200 / "models" / "llama8b" / "config.json", model / "config.json")
    entry = known_good_record(tmp_path, GDN.model_copy(update={"model": str(model)})).entry
    assert entry.model_config_hash and entry.model_config_hash.startswith("sha256:")
    found = known_good_lookup(
        tmp_path, KnownGoodLookupRequest(model=str(model), hardware="nvidia h200", engine_version="0.26.0")
    )
    assert found.found and "--gdn-prefill-backend=triton" in found.note
    moved = known_good_lookup(
        tmp_path,
        KnownGoodLookupRequest(
            model="/elsewhere/llama8b",
            hardware="NVIDIA H200",
            engine_version="0.26.0",
            model_config_hash=entry.model_config_hash,
        ),
    )
    assert moved.found
    miss = known_good_lookup(
        tmp_path, KnownGoodLookupRequest(model=str(model), hardware="NVIDIA B200", engine_version="0.26.0")
    )
    assert not miss.found and "no known-good entry" in miss.note


def test_a_ladders_ceiling_becomes_an_entry_in_one_call(tmp_path: Path) -> None:
    (tmp_path / "ladders").mkdir()
    shutil.copy(LADDER, tmp_path / "ladders" / "l8b.yml")
    recorded = known_good_record(tmp_path, KnownGoodRecordRequest(from_ladder="ladders/l8b.yml"))
    e = recorded.entry
    assert (e.model, e.hardware, e.engine, e.engine_version) == ("/models/llama8b", "NVIDIA H200", "vllm", "0.26.0")
    assert e.knobs == {
        "max_model_len": 131072,
        "max_num_batched_tokens": 131072,
        "gpu_memory_utilization": 0.9,
        "load_format": "dummy",
    }
    assert e.evidence[0].kind == "ladder_ceiling" and e.evidence[0].item == "rungs 4"
    assert "smoke-tested ceiling of ladders/l8b.yml" in e.why


def test_incomplete_entries_and_paths_out_of_the_workspace_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="needs model, hardware, engine_version, why, evidence"):
        known_good_record(tmp_path, KnownGoodRecordRequest(flags=["--x=1"]))
    with pytest.raises(InputError, match="must be a path inside the workspace"):
        known_good_record(tmp_path, KnownGoodRecordRequest(from_ladder="../l.yml"))
    with pytest.raises(InputError, match="unknown knobs"):
        known_good_record(tmp_path, GDN.model_copy(update={"knobs": {"colour": "red"}}))
    registry_path(tmp_path).write_text("entries: [{model: m}]\n")
    with pytest.raises(InputError, match="known-good registry .* is invalid"):
        known_good_list(tmp_path)


# ---- applying an entry -----------------------------------------------------------------------------------------------


def entry(**changes: object) -> KnownGoodEntry:
    base = dict(
        model="/models/m",
        hardware="NVIDIA H200",
        engine="vllm",
        engine_version="0.26.0",
        flags=["--gdn-prefill-backend=triton", "--max-cudagraph-capture-size=8192"],
        env={"NCCL_P2P_DISABLE": "1"},
        knobs={"enforce_eager": True, "max_num_seqs": 64},
        why="w",
        evidence=[{"kind": "note", "ref": "n"}],
        recorded_at="2026-11-30T00:00:00Z",
    )
    return KnownGoodEntry.model_validate(base | changes)


def test_an_entry_adds_what_the_config_lacks_and_keeps_what_it_sets_otherwise() -> None:
    config = ServeConfig(
        model="/models/m", max_model_len=4096, max_num_seqs=32, extra_flags=["--max-cudagraph-capture-size=4096"]
    )
    updated, added, kept = kg.apply_entry(config, entry())
    assert updated.extra_flags == ["--max-cudagraph-capture-size=4096", "--gdn-prefill-backend=triton"]
    assert updated.env == {"NCCL_P2P_DISABLE": "1"} and updated.enforce_eager is True and updated.max_num_seqs == 32
    assert added == ["flag --gdn-prefill-backend=triton", "env NCCL_P2P_DISABLE=1", "enforce_eager True"]
    assert kept == [
        "flag --max-cudagraph-capture-size=4096 (the entry says --max-cudagraph-capture-size=8192)",
        "max_num_seqs 32 (the entry says 64)",
    ]
    assert kg.holds(updated, entry(knobs={"enforce_eager": True}, flags=["--gdn-prefill-backend=triton"]))
    assert not kg.holds(config, entry())


def test_apply_known_good_says_what_it_did(tmp_path: Path) -> None:
    given = {"model", "hardware", "engine_version", "flags", "env", "knobs", "why", "evidence"}
    known_good_record(tmp_path, KnownGoodRecordRequest(**entry().model_dump(include=given)))
    config = ServeConfig(model="/models/m", max_model_len=4096)
    h200 = Identity("NVIDIA H200", "0.26.0")
    updated, use = apply_known_good(config, registry_path(tmp_path), identity=h200, engine="vllm")
    assert use.applied and use.entry is not None
    assert "known-good entry /models/m on NVIDIA H200, vllm 0.26.0 applied" in use.note
    assert "--gdn-prefill-backend=triton" in updated.extra_flags
    same, off = apply_known_good(config, registry_path(tmp_path), identity=h200, engine="vllm", skip=True)
    assert same == config and not off.applied and "turned off by the request" in off.note
    newer = Identity("NVIDIA H200", "0.27.0")
    _, other = apply_known_good(config, registry_path(tmp_path), identity=newer, engine="vllm")
    assert not other.applied and "no known-good entry for /models/m on NVIDIA H200, vllm 0.27.0" in other.note
    _, unknown = apply_known_good(
        config, registry_path(tmp_path), identity=Identity("cpu", None, why="no version"), engine="vllm"
    )
    assert not unknown.applied and "the engine's version is unknown (no version)" in unknown.note


# ---- baselines.yml ---------------------------------------------------------------------------------------------------


def bench_file(root: Path, name: str, **changes: float) -> str:
    data = json.loads((H200 / "bench_l8b_c16.json").read_text()) | changes
    (root / "bench").mkdir(exist_ok=True)
    (root / "bench" / name).write_text(json.dumps(data))
    return f"bench/{name}"


def test_baselines_round_trip_with_comments_and_a_diff_against_a_bench_file(tmp_path: Path) -> None:
    model = tmp_path / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(H200 / "models" / "llama8b" / "config.json", model / "config.json")
    ctx = context(16, workload=context(16).workload.model_copy(update={"num_prompts": 64}))
    ctx = ctx.model_copy(
        update={
            "model": ctx.model.model_copy(update={"name": str(model), "config_hash": None}),
            "serve": ctx.serve.model_copy(update={"model": str(model)}),
        }
    )
    made = perf_baseline_record(
        tmp_path,
        PerfBaselineRecordRequest(
            name="prod", bench_file=bench_file(tmp_path, "a.json"), context=ctx, note="the config in production"
        ),
    )
    point = made.baseline.points[0]
    throughput = point.metrics["output_throughput"]
    assert throughput.mean == pytest.approx(1890.39, abs=0.01) and throughput.n == 1
    assert point.sol is not None and point.sol.key == "h200-sxm"  # the real H200 bench: 45.15% of its ceiling
    assert point.sol.pct_of_ceiling == pytest.approx(45.15, abs=0.01)
    path = tmp_path / "baselines.yml"
    path.write_text(path.read_text().replace("  prod:\n", "  # the one to beat\n  prod:\n"))
    perf_baseline_record(tmp_path, PerfBaselineRecordRequest(name="canary", bench_file="bench/a.json", context=ctx))
    text = path.read_text()
    assert "# the one to beat" in text and text.startswith("# redline baselines") and "canary:" in text
    with pytest.raises(InputError, match="already in baselines.yml: pass replace=true"):
        perf_baseline_record(tmp_path, PerfBaselineRecordRequest(name="prod", bench_file="bench/a.json", context=ctx))
    assert set(read_baselines(tmp_path).baselines) == {"prod", "canary"}

    faster = bench_file(tmp_path, "b.json", output_throughput=2100.0)
    d = perf_baseline_diff(tmp_path, PerfBaselineDiffRequest(baseline="prod", bench_file=faster, context=ctx))
    assert d.colour == "GREEN" and "c=16" in d.text
    with pytest.raises(InputError, match="contexts differ.*engine.version"):
        perf_baseline_diff(
            tmp_path,
            PerfBaselineDiffRequest(
                baseline="prod",
                bench_file=faster,
                context=ctx.model_copy(update={"engine": ctx.engine.model_copy(update={"version": "0.27.0"})}),
            ),
        )
    with pytest.raises(InputError, match="does not match the bench file: concurrency 8"):
        perf_baseline_diff(tmp_path, PerfBaselineDiffRequest(baseline="prod", bench_file=faster, context=context(8)))
    with pytest.raises(InputError, match="give context"):
        perf_baseline_record(tmp_path, PerfBaselineRecordRequest(name="x", bench_file="bench/a.json"))
