"""campaign_report: report.md and the three plots exist, and the data behind them is the verdicts' (not pixels)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.models.context import Node
from redline.ops.campaign.plan import load_campaign
from redline.ops.campaign.report import campaign_report, md, pareto_plot, plots_of, sentence
from redline.ops.campaign.verdict import CellJudge
from redline.ops.evidence.sources import cell_context
from redline.policy import campaign as policy
from redline.policy import champion as figures
from redline.targets import GpuInfo, HostInfo
from tests.campaign.helpers import Fake, campaign, make_fake, verdict, write_verdict

PNG = b"\x89PNG\r\n\x1a\n"


def _verdicts() -> list:  # type: ignore[type-arg]
    extra = {
        "output_throughput": {1: 40.0, 4: 150.0},
        "median_tpot_ms": {1: 10.0, 4: 20.0},
        "tokens_per_s_per_user": {1: 100.0, 4: 50.0},
    }
    better = {
        "output_throughput": {1: 42.0, 4: 180.0},
        "median_tpot_ms": {1: 10.0, 4: 20.5},  # inside the 3% band: no guard worse beyond the noise
        "tokens_per_s_per_user": {1: 100.0, 4: 48.0},
    }
    return [
        verdict("mnbt2048", {1: 40.0, 4: 150.0}, extra=extra),
        verdict("mnbt8192", {1: 42.0, 4: 180.0}, extra=better),
    ]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Fake, Path]:
    """A campaign file whose two cells have verdicts (written by hand: the data is the point here)."""
    fake = make_fake(tmp_path)
    path = fake.write(concurrencies=[1, 4])
    for v in _verdicts():
        write_verdict(load_campaign(path).results, v.model_copy(update={"campaign": "c1"}))
    return fake, path


def test_the_report_and_its_plots_are_written_with_their_series(recorded: tuple[Fake, Path]) -> None:
    fake, path = recorded
    report = campaign_report(path)
    folder = fake.campaigns / "c1"
    for name in ("report.md", "throughput.png", "tpot.png", "pareto.png"):
        assert (folder / name).exists(), name
    for plot in report.plots:
        assert (folder / plot.file).read_bytes().startswith(PNG)
    plots = {p.name: p for p in report.plots}
    assert {s.label: (s.x, s.y) for s in plots["throughput"].series} == {
        "mnbt2048": ([1.0, 4.0], [40.0, 150.0]),
        "mnbt8192": ([1.0, 4.0], [42.0, 180.0]),
    }
    assert {s.label: s.y for s in plots["tpot"].series} == {"mnbt2048": [10.0, 20.0], "mnbt8192": [10.0, 20.5]}
    pareto = plots["pareto"]
    front = next(s for s in pareto.series if s.label == "Pareto front")
    assert list(zip(front.x, front.y, strict=True)) == [(180.0, 48.0), (150.0, 50.0), (42.0, 100.0)]
    assert report.champion.champion == "mnbt8192"  # +20% at c=4, beyond the 3% band
    assert pareto.marked is not None and pareto.marked.label == "champion mnbt8192 (DRAFT)"
    assert pareto.marked.x == [42.0, 180.0]
    text = (folder / "report.md").read_text()
    assert "champion **mnbt8192** (DRAFT)" in text and "| mnbt8192 | warm/graphs | 42.00 | 180.00 |" in text
    for plot in report.plots:
        assert f"]({plot.file})" in text
    # the report reads as the terminal does (issue 31): an arrow is an arrow, and a note's own stop is not doubled
    assert "&gt;" not in text and ".." not in text.replace("...", ""), [
        line for line in text.splitlines() if "&gt;" in line or ".." in line
    ]
    assert "before calling it a VERDICT." in text


def test_md_keeps_an_arrow_and_quotes_nothing() -> None:
    assert md("batched tokens 2,048 -> 8,192") == "batched tokens 2,048 -> 8,192"
    assert md("> quoted") == "\\> quoted" and md("a <b> c") == "a &lt;b> c"
    assert sentence("a VERDICT.") == "a VERDICT." and sentence("a VERDICT") == "a VERDICT."


def test_with_no_improvement_the_baseline_is_marked_and_the_report_says_so(tmp_path: Path) -> None:
    c = campaign(concurrencies=[1, 4])
    flat = {"output_throughput": {1: 40.0, 4: 150.0}, "tokens_per_s_per_user": {1: 100.0, 4: 50.0}}
    verdicts = {
        v.cell: v
        for v in [
            verdict("mnbt2048", {1: 40.0, 4: 150.0}, extra=flat),
            verdict("mnbt8192", {1: 40.0, 4: 151.0}, extra=flat),
        ]
    }
    table = figures.campaign_table(c, list(verdicts), verdicts)
    champion = figures.select_champion(c, list(verdicts), "mnbt2048", verdicts)
    assert champion.outcome == "no_improvement"
    marked = pareto_plot(table, champion).marked
    assert marked is not None and marked.label == "baseline mnbt2048 (no improvement found)"


def test_red_cells_are_drawn_by_name_but_never_on_the_pareto_front() -> None:
    c = campaign(concurrencies=[1, 4])
    extra = {"output_throughput": {1: 40.0, 4: 500.0}, "tokens_per_s_per_user": {1: 900.0, 4: 900.0}}
    verdicts = {
        v.cell: v
        for v in [
            verdict(
                "mnbt2048",
                {1: 40.0, 4: 150.0},
                extra={"output_throughput": {1: 40.0, 4: 150.0}, "tokens_per_s_per_user": {1: 100.0, 4: 50.0}},
            ),
            verdict("mnbt8192", {1: 40.0, 4: 500.0}, extra=extra, verdict="red", reason="SLA"),
        ]
    }
    table = figures.campaign_table(c, list(verdicts), verdicts)
    plots = {p.name: p for p in plots_of(table, figures.select_champion(c, list(verdicts), "mnbt2048", verdicts))}
    assert [s.label for s in plots["throughput"].series] == ["mnbt2048", "mnbt8192 (red)"]
    front = next(s for s in plots["pareto"].series if s.label == "Pareto front")
    assert 500.0 not in front.x


def test_a_report_of_a_campaign_not_yet_run_is_written_too(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    report = campaign_report(fake.write())
    assert report.champion.outcome == "no_baseline" and report.table.missing == ["mnbt2048", "mnbt8192"]
    assert "not run" in Path(report.report).read_text()


def test_a_cell_on_a_host_without_a_machine_id_is_placed_by_its_gpus_uuid(recorded: tuple[Fake, Path]) -> None:
    """The lent H200 has no /etc/machine-id: its GPU's UUID is what names the node in a cell's context."""
    fake, path = recorded
    loaded = load_campaign(path)
    plan = policy.plan_campaign(loaded.campaign, policy.base_config(loaded.campaign), {}, path=str(path))
    uuid = "GPU-87e77369-5345-4073-ed4b-79c80003dc9a"
    host = HostInfo(hostname="vm", gpus=[GpuInfo(name="NVIDIA H200", memory_mib=143_771, uuid=uuid)])
    context = CellJudge(loaded, plan, {"vllm": "0.26.0"}, {}).context(plan.cells[0], "0.26.0", host)
    assert context.node == Node(hostname="vm", machine_id=None, gpu_uuids=[uuid])
    base = verdict("mnbt2048", {1: 40.0, 4: 150.0}).model_copy(update={"campaign": "c1"})
    base = base.model_copy(update={"context": base.context.model_copy(update={"node": context.node})})
    write_verdict(loaded.results, base)
    assert cell_context(base, base.results[0]).node == Node(hostname="vm", gpu_uuids=[uuid])
    text = (fake.campaigns / "c1" / Path(campaign_report(path).report).name).read_text()
    assert "host vm (machine ?, GPUs 0003dc9a)" in text
