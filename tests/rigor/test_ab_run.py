"""ab_run for real: the fake engine (tests/server/fake_vllm.py, with FAKE_VLLM_DECODE_MODEL=1 so that an arm's
figures follow its config) in real child processes through the real LocalTarget.

Covers the ack gate, the dry run, a 3-trial A/B of two configs (VERDICT) and a baseline record and diff on its
results, fewer trials (DRAFT) and a resume that adds trials, a failed arm, the known-good entry applied by default
and turned off, and a cancel that leaves nothing running.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from redline.errors import InputError, RunFailed
from redline.ledger.ab_file import AbPaths, read_trial
from redline.models.ab import AbResult
from redline.models.known_good import Evidence
from redline.ops.ab.apply import champion_apply
from redline.ops.ab.run import ab_run
from redline.ops.evidence.baseline import perf_baseline_diff, perf_baseline_record
from redline.ops.evidence.frontier import lever_frontier
from redline.ops.evidence.known_good import known_good_record
from redline.ops.requests_evidence import (
    ChampionApplyRequest,
    KnownGoodRecordRequest,
    LeverFrontierRequest,
    PerfBaselineDiffRequest,
    PerfBaselineRecordRequest,
)
from tests.campaign.helpers import Fake, make_fake, wait_until_gone
from tests.conftest import processes_naming
from tests.rigor.helpers import ab_spec
from tests.server.helpers import FAKE_VLLM

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def boots(fake: Fake) -> int:
    runs = fake.root / "target" / "runs"
    return len([d for d in runs.iterdir() if (d / "boot.log").exists()]) if runs.exists() else 0


@pytest.mark.parametrize("ack", [False, "yes", 1])
async def test_nothing_starts_without_the_ack(fake: Fake, ws: Path, ack: object) -> None:
    with pytest.raises(InputError) as exc:
        await ab_run(ws, ab_spec(fake), fake.target(), i_understand_this_submits_jobs=ack)  # type: ignore[arg-type]
    assert "pass i_understand_this_submits_jobs=true" in str(exc.value) and "dry_run=true" in str(exc.value)
    assert not (ws / "ab").exists() and not (fake.root / "target").exists()
    assert processes_naming(fake.root) == []


async def test_a_dry_run_lists_every_boot_and_bench_in_order_and_starts_nothing(fake: Fake, ws: Path) -> None:
    result = await ab_run(ws, ab_spec(fake), fake.target(), i_understand_this_submits_jobs=False, dry_run=True)
    plan = result.plan
    assert result.dry_run and plan is not None and plan.boots == 6 and "none started" in result.summary
    assert [(s.order, s.arm, s.trial) for s in plan.trials] == [
        (1, "small", 1),
        (2, "large", 1),
        (3, "small", 2),
        (4, "large", 2),
        (5, "small", 3),
        (6, "large", 3),
    ]
    for step in plan.trials:
        mnbt = {"small": "2048", "large": "8192"}[step.arm]
        boot = step.boot_command
        assert boot[:3] == [fake.target().engine_command("vllm", [])[0], str(FAKE_VLLM), "serve"]
        assert boot[boot.index("--max-num-batched-tokens") + 1] == mnbt and "--max-num-seqs" in boot
        assert step.warmup_command is not None and step.folder == f"ab/mnbt/trials/{step.arm}-{step.trial}"
        benches = step.bench_commands
        assert [b[b.index("--max-concurrency") + 1] for b in benches] == ["1", "4"]
        assert [b[b.index("--seed") + 1] for b in benches] == ["1", "2"]  # the same prompts in every trial and arm
        assert all("$RUN_DIR" in b for b in benches)
    assert any("max_num_seqs was unset" in g and "pinned to 4" in g for arm in plan.arms for g in arm.gates)
    assert "no known-good entry" in plan.known_good.note
    assert not (ws / "ab").exists() and not (fake.root / "target" / "runs").exists()
    assert processes_naming(fake.root) == []


async def test_a_three_trial_ab_is_a_verdict_and_its_arms_become_a_baseline_and_a_diff(fake: Fake, ws: Path) -> None:
    seen: list[str] = []

    async def progress(fraction: float, text: str) -> None:
        seen.append(text)

    async with fake.target() as target:
        host = await target.host_info()
        result = await ab_run(
            ws, ab_spec(fake, claim="latency"), target, i_understand_this_submits_jobs=True, progress=progress
        )
    assert boots(fake) == 6 and result.ran == ["small-1", "large-1", "small-2", "large-2", "small-3", "large-3"]
    assert any("trial 6 of 6 (large-3)" in text for text in seen)
    v = result.verdict
    assert v is not None and v.rigor == "VERDICT" and v.failed == [] and v.metric == "median_tpot_ms"
    assert v.champion == "large" and v.outcome == "improvement"
    assert all(c.outcome == "improvement" and c.welch.p_value < 0.05 for c in v.comparisons)
    assert result.summary.startswith("VERDICT: large improves on small (median_tpot_ms)")
    assert "% of SoL" not in result.summary and "no ceiling: no GPU on this host" in result.summary  # a CPU host
    paths = AbPaths(ws, "mnbt")
    for arm in result.arms:
        assert arm.trials_ok == 3 and [p.concurrency for p in arm.points] == [1, 4]
        for point in arm.points:
            stats = point.metrics
            assert {"median_tpot_ms", "median_itl_ms", "median_ttft_ms", "output_throughput"} <= set(stats)
            assert stats["median_tpot_ms"].n == 3 and stats["median_tpot_ms"].std is not None
            assert [t.trial for t in point.trials] == [1, 2, 3]
            ctx = point.context
            assert ctx.trials == 3 and ctx.node is not None and ctx.node.hostname == host.hostname
            assert ctx.node.machine_id == host.machine_id and ctx.workload.concurrency == point.concurrency
            assert ctx.engine.version == "0.26.0" and ctx.regime.cache == "warm" and ctx.provenance == "measured"
            assert ctx.model.config_hash and point.sol.key is None
    for k in (1, 2, 3):
        record = read_trial(paths, "large", k)
        assert record is not None and record.ok and record.node.hostname == host.hostname and record.warm
        folder = paths.trial_dir("large", k)
        assert {p.name for p in folder.iterdir()} >= {"trial.yml", "boot.log", "bench-c1.json", "bench-c4.json"}
    assert result.next_levers and result.next_levers[0].gate
    assert result.close is not None and not result.close.closed
    # the lever large tried, judged an improvement by the VERDICT, is on the frontier and off its untried list
    [frontier] = lever_frontier(ws, LeverFrontierRequest()).frontiers
    assert [(t.lever, t.outcome, t.run) for t in frontier.tried] == [
        ("max_num_batched_tokens", "improvement", "ab/mnbt.yml, arm large")
    ]
    assert "max_num_batched_tokens" not in {v.lever for v in frontier.untried}
    assert [v.lever for v in result.next_levers] == [v.lever for v in frontier.untried][: len(result.next_levers)]
    assert result.frontier is not None and result.frontier.startswith(f"{fake.model}: ")
    assert any("known_good_record" in m for m in result.close.missing)
    assert paths.results.server_files() == [] and processes_naming(fake.root) == []

    # the arms' results, recorded and diffed
    recorded = perf_baseline_record(ws, PerfBaselineRecordRequest(name="small", ab="mnbt", arm="small"))
    assert [p.context.workload.concurrency for p in recorded.baseline.points] == [1, 4]
    diff = perf_baseline_diff(
        ws, PerfBaselineDiffRequest(baseline="small", ab="mnbt", arm="large", focus="median_tpot_ms")
    )
    assert diff.colour == "GREEN" and all(p.colour == "GREEN" for p in diff.points), diff.text
    assert diff.points[0].baseline_context.serve.max_num_batched_tokens == 2048
    assert diff.points[0].current_context.serve.max_num_batched_tokens == 8192
    back = perf_baseline_diff(ws, PerfBaselineDiffRequest(baseline="small", ab="mnbt", arm="small"))
    assert back.colour == "YELLOW" and "no improvement: output_throughput no change" in back.reason
    assert "inside the noise (Welch's t-test" in back.reason

    # an open champion is not written back: the close's missing steps are the refusal
    (ws / "deploy").mkdir()
    (ws / "deploy" / "values.yaml").write_text(VALUES)
    apply = ChampionApplyRequest(ab="mnbt", values="deploy/values.yaml", baseline="llama8b-prod", dry_run=True)
    with pytest.raises(InputError, match="champion 'large' of A/B 'mnbt' is not closed: .*known_good_record"):
        champion_apply(ws, apply)

    # closing the champion: its known-good config recorded, a next lever named
    known_good_record(ws, KnownGoodRecordRequest(from_ab="mnbt", arm="large", why="the A/B's champion"))
    async with fake.target() as target:
        again = await ab_run(ws, ab_spec(fake, claim="latency"), target, i_understand_this_submits_jobs=True)
    assert again.ran == [] and len(again.skipped) == 6 and boots(fake) == 6  # resumed: nothing left to run
    assert again.close is not None and again.close.closed and again.close.known_good is not None
    check_written_back(ws, apply)


async def test_an_ab_on_two_workloads_judges_each_alone_and_names_a_champion_across_them_only_by_all(
    fake: Fake, ws: Path
) -> None:
    # long prompts at their own concurrency (2), the chat shape at the A/B's (1 and 4)
    shapes = {
        "chat": {"input_len": 128, "output_len": 16},
        "long": {"input_len": 512, "output_len": 32, "concurrencies": [2]},
    }
    spec = ab_spec(fake, name="shapes", claim="latency", workload=None, workloads=shapes, combine="all")
    async with fake.target() as target:
        result = await ab_run(ws, spec, target, i_understand_this_submits_jobs=True)
    assert boots(fake) == 6 and len(result.ran) == 6  # one boot per trial, every workload benched on it
    record = read_trial(AbPaths(ws, "shapes"), "large", 1)
    assert record is not None and [(p.workload, p.concurrency) for p in record.points] == [
        ("chat", 1),
        ("chat", 4),
        ("long", 2),
    ]
    assert [(p.context.workload.name, p.context.workload.input_len) for p in record.points] == [
        ("chat", 128),
        ("chat", 128),
        ("long", 512),
    ]
    assert {f.name for f in AbPaths(ws, "shapes").trial_dir("large", 1).iterdir()} >= {
        "bench-chat-c1.json",
        "bench-chat-c4.json",
        "bench-long-c2.json",
    }
    for arm in result.arms:
        assert [(p.workload, p.concurrency, p.metrics["median_tpot_ms"].n) for p in arm.points] == [
            ("chat", 1, 3),
            ("chat", 4, 3),
            ("long", 2, 3),
        ]
    v = result.verdict
    assert v is not None and v.rigor == "VERDICT" and v.outcome == "improvement" and v.champion == "large"
    assert [(w.workload, w.champion) for w in v.workloads] == [("chat", "large"), ("long", "large")]
    assert {c.workload for c in v.comparisons} == {"chat", "long"}
    assert (
        " median_tpot_ms on chat at c=4 (n=3)" in result.summary
        and " median_tpot_ms on long at c=2 (n=3)" in result.summary
    )

    # the same A/B judged again under combine each: nothing boots, and no champion is named across the workloads
    async with fake.target() as target:
        each = await ab_run(
            ws, spec.model_copy(update={"combine": "each"}), target, i_understand_this_submits_jobs=True
        )
    assert each.ran == [] and boots(fake) == 6
    assert each.verdict is not None and each.verdict.outcome == "per_workload" and each.verdict.champion is None
    assert [w.model_dump() for w in each.verdict.workloads] == [w.model_dump() for w in v.workloads]
    assert each.close is None


VALUES = """\
# the deploy's values: a person's file
vllm:
  extraArgs:
    - --max-num-batched-tokens=2048   # the baseline's
    - --trust-remote-code
  replicas: 1   # kept
"""


def check_written_back(ws: Path, apply: ChampionApplyRequest) -> None:
    """The closed champion into the values file: the dry run's diff, then exactly that diff written, comments kept,
    and the champion the new baseline; a stale diff_id and a missing acknowledgement are refused."""
    values = ws / "deploy" / "values.yaml"
    with pytest.raises(InputError, match="values '../values.yaml' must be a path inside the workspace"):
        champion_apply(ws, apply.model_copy(update={"values": "../values.yaml"}))
    dry = champion_apply(ws, apply)
    assert not dry.written and dry.baseline is None and values.read_text() == VALUES
    assert "-    - --max-num-batched-tokens=2048   # the baseline's" in dry.diff
    assert "+    - --max-num-batched-tokens=8192   # the baseline's" in dry.diff
    assert "--max-model-len=4096" in dry.flags and not any("--port" in f or "--host" in f for f in dry.flags)
    with pytest.raises(InputError, match="i_understand_this_writes_the_deploy=true"):
        champion_apply(ws, apply.model_copy(update={"dry_run": False}))
    go = {"dry_run": False, "i_understand_this_writes_the_deploy": True}
    for expect in ("0" * 16, None):  # the refusal never says the id: the write follows a dry run that was read
        with pytest.raises(InputError, match="expect must be the diff_id of the dry run") as refused:
            champion_apply(ws, apply.model_copy(update=go | {"expect": expect}))
        assert dry.diff_id not in str(refused.value)
    done = champion_apply(ws, apply.model_copy(update=go | {"expect": dry.diff_id}))
    assert done.written and done.diff == dry.diff
    text = values.read_text()
    assert "# the deploy's values: a person's file" in text and "replicas: 1   # kept" in text
    assert "--max-num-batched-tokens=8192   # the baseline's" in text and "    - --trust-remote-code\n" in text
    assert done.baseline is not None and done.baseline.name == "llama8b-prod"
    assert done.baseline.baseline.source.kind == "ab_arm" and done.baseline.baseline.source.item == "large"
    again = champion_apply(ws, apply)  # the deploy carries the champion now: nothing left to write
    assert again.changes == [] and again.diff == ""


async def test_fewer_trials_is_a_draft_and_a_rerun_adds_trials(fake: Fake, ws: Path) -> None:
    async with fake.target() as target:
        short = await ab_run(ws, ab_spec(fake, trials=2), target, i_understand_this_submits_jobs=True)
        assert short.verdict is not None and short.verdict.rigor == "DRAFT" and short.verdict.failed == ["min_trials"]
        assert "each arm needs at least 3 successful trials" in short.verdict.summary
        more = await ab_run(ws, ab_spec(fake, trials=3), target, i_understand_this_submits_jobs=True)
    assert more.ran == ["small-3", "large-3"] and boots(fake) == 6
    assert more.verdict is not None and more.verdict.rigor == "VERDICT"
    assert "trials: 3" in (ws / "ab" / "mnbt.yml").read_text()


async def test_another_spec_under_the_same_name_is_refused(fake: Fake, ws: Path) -> None:
    async with fake.target() as target:
        await ab_run(ws, ab_spec(fake, trials=1), target, i_understand_this_submits_jobs=True)
        with pytest.raises(InputError, match="already run with another spec"):
            await ab_run(ws, ab_spec(fake, trials=1, concurrencies=[2]), target, i_understand_this_submits_jobs=True)


async def test_an_arm_that_fails_to_boot_leaves_a_draft(fake: Fake, ws: Path) -> None:
    async with fake.target(FAKE_VLLM_MAX_BATCHED_TOKENS="4096") as target:
        result = await ab_run(ws, ab_spec(fake), target, i_understand_this_submits_jobs=True)
    large = next(a for a in result.arms if a.arm == "large")
    assert large.trials_ok == 0 and len(large.trials_failed) == 3 and "boot failed: oom_cuda" in large.trials_failed[0]
    assert result.verdict is not None and result.verdict.rigor == "DRAFT" and "min_trials" in result.verdict.failed
    assert processes_naming(fake.root) == []


async def test_an_ab_whose_every_trial_was_flagged_fails_naming_the_cause_and_the_fix(tmp_path: Path, ws: Path) -> None:
    # a warm cache on every server (40% of prompt tokens found, in what another client sent it), no reset to empty it
    # (dev mode off by the target)
    fake = make_fake(
        tmp_path,
        FAKE_VLLM_DECODE_MODEL="1",
        FAKE_VLLM_PREFIX_HITS="0.4",
        FAKE_VLLM_OTHER_CLIENT_TOKENS="4096",
        VLLM_SERVER_DEV_MODE="0",
    )
    async with fake.target() as target:
        with pytest.raises(RunFailed) as failed:
            await ab_run(ws, ab_spec(fake, trials=1), target, i_understand_this_submits_jobs=True)
    result = failed.value.result
    assert isinstance(result, AbResult) and result.ran == ["small-1", "large-1"]
    assert result.failed is not None and result.failed.startswith("every trial failed (2 of 2): concurrency ")
    assert "prefix cache not emptied before the bench" in result.failed and "not ranked" in result.failed
    assert result.summary.endswith(f"FAILED: {result.failed}")
    assert "let redline empty it before each bench" in result.next and "another seed" in result.next
    assert result.next.endswith("then delete ab/mnbt/trials (or give the A/B another name) and run it again")
    async with fake.target(VLLM_SERVER_DEV_MODE="1") as target:  # the same servers, emptied: every trial clean
        clean = await ab_run(
            ws, ab_spec(fake, name="mnbt-emptied", trials=1), target, i_understand_this_submits_jobs=True
        )
    assert clean.failed is None and all(a.trials_ok == 1 for a in clean.arms)


async def test_a_known_good_entry_is_applied_by_default_and_can_be_turned_off(fake: Fake, ws: Path) -> None:
    known_good_record(
        ws,
        KnownGoodRecordRequest(
            model=str(fake.model),
            hardware="cpu",
            engine_version="0.26.0",
            flags=["--gdn-prefill-backend=triton"],
            why="the kernel the model needs",
            evidence=[Evidence(kind="note", ref="notes.md")],
        ),
    )
    async with fake.target() as target:
        on = await ab_run(ws, ab_spec(fake, name="kg-on"), target, i_understand_this_submits_jobs=False, dry_run=True)
        off = await ab_run(
            ws,
            ab_spec(fake, name="kg-off"),
            target,
            i_understand_this_submits_jobs=False,
            dry_run=True,
            skip_known_good=True,
        )
    assert on.known_good.applied and on.known_good.added == ["flag --gdn-prefill-backend=triton"]
    assert "known-good entry" in on.summary and "applied" in on.known_good.note
    assert all("--gdn-prefill-backend=triton" in a.boot_command for a in on.plan.arms)  # type: ignore[union-attr]
    assert not off.known_good.applied and "turned off by the request" in off.known_good.note
    assert all("--gdn-prefill-backend=triton" not in a.boot_command for a in off.plan.arms)  # type: ignore[union-attr]


async def test_a_cancel_leaves_nothing_running_and_a_rerun_resumes(fake: Fake, ws: Path) -> None:
    spec = ab_spec(fake, trials=1)
    async with fake.target(FAKE_VLLM_BOOT_S="30") as target:
        with anyio.move_on_after(3):  # cancelled while the first trial's server boots
            await ab_run(ws, spec, target, i_understand_this_submits_jobs=True)
    assert wait_until_gone(fake.root) == [] and AbPaths(ws, "mnbt").results.server_files() == []
    assert read_trial(AbPaths(ws, "mnbt"), "small", 1) is None
    async with fake.target() as target:
        result = await ab_run(ws, spec, target, i_understand_this_submits_jobs=True)
    assert result.ran == ["small-1", "large-1"] and processes_naming(fake.root) == []
