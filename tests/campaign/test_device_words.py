"""No GPU words where the host has none (issue 20, item 9): a per-GPU figure (output_throughput_per_gpu: divided by
TP x PP x DP) is per GPU where the context saw one, per host on a host without one (one engine process), and per
device where such a host runs several workers. The champion's scoring, a ranked cell's figures, the baseline diff's
figures, the Pareto plot and report.md say it so."""

from __future__ import annotations

import shutil
from pathlib import Path

from redline.ledger.campaign_file import read_verdict, write_campaign
from redline.models.baseline import BaselinePoint
from redline.models.campaign_results import CellVerdict
from redline.models.context import Hardware, Parallelism, device_of
from redline.ops.campaign.report import campaign_report
from redline.policy import champion as figures
from redline.policy.baseline_diff import classify
from redline.policy.noise import stated_band
from tests.campaign.helpers import campaign, verdict, write_verdict

H200 = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-sglang-0.5.17-h200-campaign"


def on_h200(v: CellVerdict) -> CellVerdict:
    """The same verdict as measured on one H200."""
    hardware = Hardware(gpu_name="NVIDIA H200", gpu_memory_gib=140.4, gpu_count=1)
    return v.model_copy(update={"context": v.context.model_copy(update={"hardware": hardware})})


def with_tp(v: CellVerdict, tp: int) -> CellVerdict:
    return v.model_copy(update={"context": v.context.model_copy(update={"parallelism": Parallelism(tp=tp)})})


def cells() -> list[CellVerdict]:
    return [verdict("mnbt2048", {1: 50, 8: 100}), verdict("mnbt8192", {1: 55, 8: 110})]


def select(verdicts: list[CellVerdict], focus: str = "throughput"):  # type: ignore[no-untyped-def]
    return figures.select_champion(
        campaign(focus=focus), [v.cell for v in verdicts], "mnbt2048", {v.cell: v for v in verdicts}
    )


def test_the_device_of_a_context_is_a_gpu_the_host_or_a_device() -> None:
    cpu = verdict("a", {1: 1.0}).context
    assert cpu.hardware.gpu_name is None and cpu.hardware.gpu_count == 0  # the helper's host showed no GPU
    assert cpu.device == "host"
    assert with_tp(verdict("a", {1: 1.0}), 2).context.device == "device"
    assert on_h200(verdict("a", {1: 1.0})).context.device == "GPU"
    assert device_of([cpu, cpu]) == "host" and device_of([]) == "device"
    assert device_of([cpu, on_h200(verdict("a", {1: 1.0})).context]) == "device"


def test_champion_select_on_a_cpu_host_scores_per_host_and_says_no_gpu() -> None:
    report = select(cells())
    assert report.scoring == "the mean output tokens/s per host at the concurrency where it is highest"
    win = next(c for c in report.ranked if c.cell == "mnbt8192")
    assert win.noise is not None and win.noise.unit == "tok/s/host"
    assert "(100 -> 110 tok/s/host)" in win.why
    text = report.model_dump_json()
    assert "GPU" not in text.replace("output_throughput_per_gpu", ""), text  # the metric's name is its name
    assert figures.scoring("goodput", "host").endswith("per host among the concurrencies inside the SLA")


def test_champion_select_on_gpus_scores_per_gpu_and_on_cpu_workers_per_device() -> None:
    gpu = select([on_h200(v) for v in cells()])
    assert gpu.scoring == "the mean output tokens/s per GPU at the concurrency where it is highest"
    assert "tok/s/GPU" in next(c for c in gpu.ranked if c.cell == "mnbt8192").why
    workers = select([with_tp(v, 2) for v in cells()])
    assert workers.scoring == "the mean output tokens/s per device at the concurrency where it is highest"


def test_the_baseline_diff_on_a_cpu_host_says_its_figure_per_host() -> None:
    base, current = (verdict(n, {8: f}) for n, f in (("a", 100.0), ("b", 110.0)))

    def point(v: CellVerdict) -> BaselinePoint:
        r = v.results[0]
        return BaselinePoint(context=v.context_at(r), metrics=r.metrics)

    band = stated_band(3.0, "the tolerance")
    diff = classify("output_throughput_per_gpu", "focus", point(base), point(current), band, 5.0)
    assert diff.noise.unit == "tok/s/host" and "tok/s/host" in diff.noise.says
    gpu = classify("output_throughput_per_gpu", "focus", point(on_h200(base)), point(on_h200(current)), band, 5.0)
    assert gpu.noise.unit == "tok/s/GPU"


def test_the_report_of_a_cpu_host_campaign_has_no_gpu_words(tmp_path: Path) -> None:
    path = tmp_path / "campaigns" / "c.yml"
    path.parent.mkdir()
    write_campaign(path, campaign())
    for v in cells():
        write_verdict(tmp_path / "campaigns" / "c", v)
    report = campaign_report(path)
    pareto = next(p for p in report.plots if p.name == "pareto")
    assert (pareto.title, pareto.x_label) == ("Tokens/s per user against tokens/s per host", "output tokens/s per host")
    text = Path(report.report).read_text()
    assert "- hardware: CPU host; host" in text and "per host" in text
    assert "GPU" not in text.replace("output_throughput_per_gpu", ""), text


def test_the_report_of_an_h200_campaign_keeps_its_gpu_words(tmp_path: Path) -> None:
    h200 = read_verdict(H200 / "llama8b-h200-engines", "vllm")
    assert h200 is not None and h200.context.device == "GPU"
    shutil.copytree(H200, tmp_path / "c")
    report = campaign_report(tmp_path / "c" / "engines.yml")
    pareto = next(p for p in report.plots if p.name == "pareto")
    assert pareto.x_label == "output tokens/s per GPU"
    assert "- GPU: 1 x NVIDIA H200" in Path(report.report).read_text()
