"""Campaigns whose cells boot both engines: each cell its own engine's serve command, every cell benched by the one
client (vLLM's `vllm bench serve`, the openai backend against SGLang), prefix caching matched or the plan refused,
and a champion crowned across engines that says which engine won.

The run at the end boots the fake vLLM (tests/server/fake_vllm.py) and the fake SGLang (tests/server/fake_sglang.py,
SGLang 0.5.17's own log texts: SGLang has no CPU build here) through the real LocalTarget and campaign runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger import read_ladder
from redline.ledger.campaign_file import read_verdict
from redline.models.serve import flag_value
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.results import champion_select
from redline.ops.campaign.run import CampaignKind, campaign_run
from redline.ops.campaign_read import load_campaign
from redline.ops.experiment.prepare import check_experiment
from redline.policy import campaign as policy
from redline.policy.champion import select_champion
from tests.campaign.helpers import Fake, campaign, make_fake, verdict
from tests.conftest import processes_naming
from tests.server.helpers import FAKE_SGLANG, FAKE_VLLM

VLLM_EXE = ["/opt/vllm/bin/vllm"]
SGLANG_EXE = ["/opt/sgl/bin/python3", "-m", "sglang.launch_server"]
EXES = {"vllm": VLLM_EXE, "sglang": SGLANG_EXE}
LADDER = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"


def plan(**changes):  # type: ignore[no-untyped-def]
    c = campaign(**changes)
    return policy.plan_campaign(c, policy.base_config(c), EXES, path="c.yml")


def arg(argv: list[str], flag: str) -> str | None:
    return flag_value(argv, flag)


# ---- the plan ----------------------------------------------------------------------------------------------------


def test_each_cell_boots_its_own_engine_and_every_cell_is_benched_by_the_one_client() -> None:
    p = plan(grid={"engine": ["vllm", "sglang"]})
    assert [c.name for c in p.cells] == ["vllm", "sglang"] and p.engines == ["vllm", "sglang"]
    assert p.baseline == "vllm" and p.bench_client == "vllm" and p.bench_backend is None  # cells differ: each says
    v, s = p.cells
    assert (v.engine, s.engine) == ("vllm", "sglang") and v.levers == s.levers == {}
    assert v.boot_command[:3] == [*VLLM_EXE, "serve", "m"] and arg(v.boot_command, "--max-model-len") == "4096"
    assert s.boot_command[:5] == [*SGLANG_EXE, "--model-path", "m"]
    assert arg(s.boot_command, "--context-length") == "4096" and arg(s.boot_command, "--max-running-requests") == "8"
    assert "--max-model-len" not in s.boot_command and "serve" not in s.boot_command
    for cell, backend in ((v, "vllm"), (s, "openai")):
        assert cell.bench_backend == backend
        for argv in [cell.warmup_command, *(b.command for b in cell.benches)]:
            assert argv is not None and argv[:3] == [
                *VLLM_EXE,
                "bench",
                "serve",
            ]  # the one client, as the target runs it
            assert arg(argv, "--backend") == backend and "--ignore-eos" in argv
    assert arg(s.benches[0].command, "--tokenizer") == "m" and "--tokenizer" not in v.benches[0].command
    # the same prompts for both engines: one seed per bench, in the same order
    assert [arg(b.command, "--seed") for b in v.benches] == [arg(b.command, "--seed") for b in s.benches]


def test_the_engine_axis_is_outermost_and_a_named_cell_may_name_its_engine() -> None:
    p = plan(
        grid={"engine": ["vllm", "sglang"], "max_num_batched_tokens": [2048, 8192]},
        cells=[{"name": "sgl-prod", "engine": "sglang", "max_num_batched_tokens": 4096}],
    )
    assert [(c.name, c.engine) for c in p.cells] == [
        ("sgl-prod", "sglang"),
        ("vllm-mnbt2048", "vllm"),
        ("vllm-mnbt8192", "vllm"),
        ("sglang-mnbt2048", "sglang"),
        ("sglang-mnbt8192", "sglang"),
    ]
    assert arg(p.cells[0].boot_command, "--chunked-prefill-size") == "4096"
    assert arg(p.cells[1].boot_command, "--max-num-batched-tokens") == "2048"
    assert p.cells[0].levers == {"max_num_batched_tokens": 4096}  # the engine is the cell's, not a serve lever


def test_a_cell_of_the_campaigns_engine_keeps_it() -> None:
    p = plan(engine="sglang", grid={"max_num_batched_tokens": [2048]}, cells=[{"name": "v", "engine": "vllm"}])
    assert [(c.name, c.engine) for c in p.cells] == [("v", "vllm"), ("mnbt2048", "sglang")]
    assert p.engine == "sglang" and p.engines == ["vllm", "sglang"]


def test_an_sglang_cell_refuses_a_knob_sglang_lacks_naming_the_cell() -> None:
    with pytest.raises(InputError, match=r"cell 'sglang-cgfull' \(sglang\): cudagraph_mode 'FULL' is vLLM's"):
        plan(grid={"engine": ["vllm", "sglang"], "cudagraph_mode": ["FULL"]})


def test_the_campaigns_bench_backend_is_its_own_engines_and_another_engines_cells_record_theirs() -> None:
    p = plan(grid={"engine": ["vllm", "sglang"]}, bench_backend="vllm")
    assert [c.bench_backend for c in p.cells] == ["vllm", "openai"]
    with pytest.raises(InputError, match="bench_backend: vLLM's bench command pins --backend vllm, not 'openai'"):
        plan(grid={"engine": ["vllm", "sglang"]}, bench_backend="openai")


def test_two_bench_clients_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(type(get_engine("sglang")), "bench_engine", None)  # as if SGLang were benched by its own
    with pytest.raises(InputError) as exc:
        plan(grid={"engine": ["vllm", "sglang"]})
    assert "cells of vllm and sglang would be benched by different clients" in str(exc.value)


# ---- caching matched, or the plan refused ---------------------------------------------------------------------------

REFUSED = (
    "cells of vllm and sglang differ in prefix caching ({}): a comparison across engines needs it matched, or a "
    "prefix-cache (radix) replay can fake a win; set enable_prefix_caching the same for every cell"
)


def test_an_sglang_cell_without_its_radix_cache_against_vllm_with_its_prefix_cache_is_refused() -> None:
    with pytest.raises(InputError) as exc:
        plan(
            grid=None,
            cells=[{"name": "v", "engine": "vllm"}, {"name": "s", "engine": "sglang", "enable_prefix_caching": False}],
        )
    listed = "v (vllm): on (the engine's default); s (sglang): off (set)"
    assert str(exc.value) == REFUSED.format(listed)


def test_a_vllm_cell_without_prefix_caching_against_sglangs_radix_cache_is_refused() -> None:
    with pytest.raises(InputError) as exc:
        plan(
            grid={"engine": ["vllm", "sglang"]},
            cells=[{"name": "v-off", "engine": "vllm", "enable_prefix_caching": False}],
        )
    text = str(exc.value)
    assert (
        "v-off (vllm): off (set); vllm (vllm): on (the engine's default); sglang (sglang): on (the engine's default)"
        in text
    )
    assert "a prefix-cache (radix) replay can fake a win" in text


def test_caching_off_for_every_cell_of_both_engines_plans_and_each_engine_says_it_its_own_way() -> None:
    p = plan(grid={"engine": ["vllm", "sglang"]}, base={"max_model_len": 4096, "enable_prefix_caching": False})
    v, s = p.cells
    assert "--no-enable-prefix-caching" in v.boot_command and "--disable-radix-cache" in s.boot_command
    on = plan(grid={"engine": ["vllm", "sglang"]}, base={"max_model_len": 4096, "enable_prefix_caching": True})
    assert (
        "--enable-prefix-caching" in on.cells[0].boot_command
        and "--disable-radix-cache" not in on.cells[1].boot_command
    )


def test_within_one_engine_prefix_caching_stays_a_lever() -> None:
    p = plan(grid={"enable_prefix_caching": [True, False]})
    assert [c.name for c in p.cells] == ["prefix", "noprefix"] and p.engines == ["vllm"]


# ---- a ladder's ceiling is one engine's -----------------------------------------------------------------------------


def test_a_vllm_ladder_is_no_base_for_an_sglang_cell() -> None:
    ladder = read_ladder(LADDER)
    base = {"from_ladder": "l8b.yml"}
    with pytest.raises(InputError) as exc:
        policy.base_config(campaign(model=None, base=base, grid={"engine": ["vllm", "sglang"]}), ladder)
    assert str(exc.value).startswith(
        "cell 'sglang' runs 'sglang' but base.from_ladder (l8b.yml) was climbed on 'vllm': a ceiling is one engine's"
    )
    assert policy.base_config(campaign(model=None, base=base), ladder).max_model_len == 131072  # vLLM cells only
    with pytest.raises(InputError, match="engine: the campaign runs 'sglang' but base.from_ladder"):
        policy.base_config(campaign(model=None, base=base, engine="sglang"), ladder)


# ---- the champion, across engines -----------------------------------------------------------------------------------


def test_champion_select_crowns_the_faster_engine_and_names_it() -> None:
    c = campaign(grid={"engine": ["vllm", "sglang"]})
    verdicts = {
        "vllm": verdict("vllm", {1: 40.0, 8: 150.0}),
        "sglang": verdict("sglang", {1: 45.0, 8: 180.0}, engine="sglang", version="0.5.17", backend="openai"),
    }
    report = select_champion(c, ["vllm", "sglang"], "vllm", verdicts)
    assert (report.champion, report.champion_engine, report.outcome) == ("sglang", "sglang", "improvement")
    assert report.engines == ["vllm", "sglang"] and report.rigor == "DRAFT"
    assert [(r.cell, r.engine, r.outcome) for r in report.ranked] == [
        ("sglang", "sglang", "win"),
        ("vllm", "vllm", "baseline"),
    ]
    assert report.note.startswith(
        "champion 'sglang' (sglang won; the baseline 'vllm' ran vllm): output_throughput_per_gpu better by 20.00%"
    )

    slower = {**verdicts, "sglang": verdict("sglang", {1: 30.0, 8: 100.0}, engine="sglang", backend="openai")}
    flipped = select_champion(c, ["vllm", "sglang"], "sglang", slower)
    assert (flipped.champion, flipped.champion_engine) == ("vllm", "vllm")
    assert "(vllm won; the baseline 'sglang' ran sglang)" in flipped.note
    even = select_champion(
        c, ["vllm", "sglang"], "vllm", {**verdicts, "sglang": verdict("sglang", {1: 40.0, 8: 151.0}, engine="sglang")}
    )
    assert even.champion is None and even.champion_engine is None and even.outcome == "no_improvement"
    assert "(no engine won: sglang inside the noise band)" in even.note


def test_a_baseline_engine_that_beats_every_rival_cell_is_said_to_have_won_though_there_is_no_champion() -> None:
    c = campaign(grid={"engine": ["vllm", "sglang"]})
    verdicts = {
        "vllm": verdict("vllm", {1: 40.0, 8: 150.0}),
        "sglang": verdict("sglang", {1: 38.0, 8: 120.0}, engine="sglang", backend="openai"),
    }
    report = select_champion(c, ["vllm", "sglang"], "vllm", verdicts)
    assert (report.champion, report.champion_engine, report.outcome) == (None, None, "no_improvement")
    assert report.note.startswith(
        "no improvement: no cell beat the baseline by more than the noise band (vllm won: every sglang cell is worse "
        "than the baseline beyond the noise band)"
    )
    assert [r.outcome for r in report.ranked] == ["baseline", "worse"]


def test_one_engine_says_nothing_of_engines_winning() -> None:
    report = select_champion(
        campaign(),
        ["mnbt2048", "mnbt8192"],
        "mnbt2048",
        {
            "mnbt2048": verdict("mnbt2048", {1: 40.0, 8: 150.0}),
            "mnbt8192": verdict("mnbt8192", {1: 40.0, 8: 180.0}),
        },
    )
    assert report.champion == "mnbt8192" and report.champion_engine == "vllm" and report.engines == ["vllm"]
    assert report.note.startswith("champion 'mnbt8192': output_throughput_per_gpu better by 20.00%")


# ---- a real run, both engines, one runner ----------------------------------------------------------------------------


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1", FAKE_SGLANG_SPEEDUP="1.25")


@pytest.mark.anyio
async def test_a_campaign_across_engines_runs_each_cell_on_its_engine_and_crowns_sglang(fake: Fake) -> None:
    path = fake.write(grid={"engine": ["vllm", "sglang"]}, replicates=0)
    dry = await campaign_run(path, fake.two_engine_target(), i_understand_this_submits_jobs=False, dry_run=True)
    assert dry.plan is not None and [(c.name, c.engine) for c in dry.plan.cells] == [
        ("vllm", "vllm"),
        ("sglang", "sglang"),
    ]
    sglang_boot = dry.plan.cells[1].boot_command
    assert sglang_boot[:4] == [sys.executable, str(FAKE_SGLANG), "serve", "--model-path"]
    assert dry.plan.cells[1].benches[0].command[:4] == [sys.executable, str(FAKE_VLLM), "bench", "serve"]
    assert processes_naming(fake.root) == []

    async with fake.two_engine_target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [(o.cell, o.verdict) for o in result.ran] == [("vllm", "green"), ("sglang", "green")], result.reason
    results = fake.campaigns / "c1"
    v, s = read_verdict(results, "vllm"), read_verdict(results, "sglang")
    assert v is not None and s is not None and v.context.bench is not None and s.context.bench is not None
    assert (v.context.engine.name, v.context.engine.version, v.context.bench.client, v.context.bench.backend) == (
        "vllm",
        "0.26.0",
        "vllm",
        "vllm",
    )
    # SGLang's log names no version: the cell's is what `sglang version` answered on the target
    assert (s.context.engine.name, s.context.engine.version, s.context.bench.client, s.context.bench.backend) == (
        "sglang",
        "0.5.17",
        "vllm",
        "openai",
    )
    assert (
        s.boot.status == "boot_ok" and s.boot.signals.engine == "sglang" and s.boot.signals.kv_cache_tokens == 242_360
    )
    assert s.commands.boot[:3] == [sys.executable, str(FAKE_SGLANG), "serve"] and "--context-length" in s.commands.boot
    assert all(b[:4] == [sys.executable, str(FAKE_VLLM), "bench", "serve"] for b in s.commands.bench)
    assert all(arg(b, "--backend") == "openai" and arg(b, "--tokenizer") == str(fake.model) for b in s.commands.bench)
    assert "The server is fired up and ready to roll!" in (results / "cells" / "sglang" / "boot.log").read_text()
    assert processes_naming(fake.root) == []

    champion = champion_select(path)
    assert (champion.champion, champion.champion_engine, champion.outcome) == ("sglang", "sglang", "improvement")
    assert "(sglang won; the baseline 'vllm' ran vllm)" in champion.note
    assert [(r.cell, r.engine) for r in champion.ranked] == [("sglang", "sglang"), ("vllm", "vllm")]
    report = Path(campaign_report(path).report).read_text()
    assert "champion **sglang** (DRAFT, sglang won)" in report
    assert "- engine: vllm 0.26.0; sglang 0.5.17; bench client: vllm's, backend `openai`, `vllm`" in report
    assert "- **sglang** (sglang, warm/graphs)" in report

    # a cell whose engine changed since its verdict is not skipped as done
    fake.write(grid=None, cells=[{"name": "vllm", "engine": "sglang"}, {"name": "sglang", "engine": "vllm"}])
    with pytest.raises(InputError, match="cell 'vllm' has a verdict made with another serve config \\(or engine\\)"):
        check_experiment(CampaignKind(load_campaign(path)), fake.two_engine_target())


def test_an_sglang_campaign_boots_sglang_and_is_benched_by_the_vllm_client_as_the_target_runs_it() -> None:
    p = plan(engine="sglang")
    assert p.engines == ["sglang"] and p.bench_client == "vllm" and p.bench_backend == "openai"
    for cell in p.cells:
        assert cell.boot_command[:3] == SGLANG_EXE
        assert all(b.command[:2] == [*VLLM_EXE, "bench"] for b in cell.benches)  # not SGLang's interpreter
