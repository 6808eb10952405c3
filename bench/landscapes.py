"""The recorded landscapes bench/search_replay.py replays: a campaign whose cells were booted for real (each cell's
verdict on disk, the top cells' replicate boots beside them), read the same way whatever its grid, as one or more
scenarios (a workload, a concurrency, the metric it is scored by).

A landscape is its campaign file (campaign.yml, or <name>.yml) and the results folder named by the campaign beside
it: cells/<cell>/verdict.yml for each cell's first boot, cells/<cell>.boot<k>/verdict.yml for its replicates. A
cell with no verdict yet is not in the replay (a landscape still being recorded replays the cells it has, and says
how many of the grid's those are; one listed but not recorded yet is left out, and said). To add one, list it in
LANDSCAPES with its scenarios, e.g.

    Listed("tests/data/vllm-0.26.0-h100-landscape-8b/landscape-8b/campaign.yml",
           (Scenario("long", 4, "median_ttft_ms"), Scenario("load", 128, "output_throughput"))),

or name it on the command line: `--landscape PATH --scenario long:4:median_ttft_ms`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from redline.ledger.campaign_file import read_boots, read_verdicts  # noqa: E402
from redline.models.campaign_results import CellVerdict  # noqa: E402
from redline.models.metrics import DIRECTIONS  # noqa: E402
from redline.ops.campaign_read import load_campaign  # noqa: E402
from redline.ops.experiment.predicted import for_need  # noqa: E402
from redline.policy.noise import pooled_band, stated_band  # noqa: E402
from redline.policy.search import Candidate, as_run  # noqa: E402


@dataclass(frozen=True)
class Scenario:
    """What a landscape is scored by: one workload's (None: the campaign's only one) figure at one concurrency."""

    workload: str | None
    concurrency: int
    metric: str

    def __post_init__(self) -> None:
        if self.metric not in DIRECTIONS:
            raise ValueError(f"scenario: no metric {self.metric!r}; metrics are {', '.join(DIRECTIONS)}")

    @property
    def sign(self) -> float:
        """+1 where higher is better, -1 where lower is: scores are signed so that higher is always better."""
        return 1.0 if DIRECTIONS[self.metric] == "higher" else -1.0

    def __str__(self) -> str:
        on = f"{self.workload} " if self.workload else ""
        return f"{on}c={self.concurrency} {self.metric} ({DIRECTIONS[self.metric]} better)"


def parse_scenario(text: str) -> Scenario:
    """`[workload:]concurrency:metric`, e.g. `long:4:median_ttft_ms` or `128:output_throughput`."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[-2].isdigit():
        raise ValueError(f"--scenario {text!r}: write [workload:]concurrency:metric, e.g. long:4:median_ttft_ms")
    return Scenario(parts[0] if len(parts) == 3 else None, int(parts[-2]), parts[-1])


@dataclass(frozen=True)
class Listed:
    """A shipped landscape: its campaign file (from the repository's root) and the scenarios it is replayed as."""

    campaign: str
    scenarios: tuple[Scenario, ...]
    also: tuple[str, ...] = ()  # campaigns that booted some of its cells again: their boots count as replicates


LANDSCAPES = (
    Listed(
        "tests/data/vllm-0.26.0-h200-campaign/l8b-h200.yml",
        (Scenario(None, 128, "output_throughput"), Scenario(None, 8, "median_ttft_ms")),
    ),
    Listed(
        "tests/data/vllm-0.26.0-h200-landscape/landscape-h200/campaign.yml",
        (Scenario(None, 128, "output_throughput"), Scenario(None, 16, "median_ttft_ms")),
        ("tests/data/vllm-0.26.0-h200-landscape/landscape-h200-search/campaign.yml",),  # 5 cells booted again
    ),
    Listed(  # issue 42's: 16 grid cells and vLLM's defaults, two workloads each at its own load (recorded in parts)
        "tests/data/vllm-0.26.0-h100-landscape-8b/landscape-8b/campaign.yml",
        (Scenario("long", 4, "median_ttft_ms"), Scenario("load", 128, "output_throughput")),
    ),
)


@dataclass(frozen=True)
class Landscape:
    """One scenario of a recorded landscape: its cells as the search sees them (those with a verdict), each boot's
    score (signed: higher better; None: the boot failed, or was not ranked at this scenario), the cells the memory
    model predicted could not boot, and the noise band the replicates measured."""

    name: str
    scenario: Scenario
    cells: tuple[Candidate, ...]
    baseline: str
    boots: dict[str, tuple[float | None, ...]]
    infeasible: dict[str, str]
    grid: int  # the campaign's cells, booted or not
    band: float  # the noise band, as a fraction
    noise: float | None  # one boot's spread (std / mean) where replicates measured it
    band_source: str

    def truth(self, cell: str) -> float | None:
        """The cell's score: the mean of its boots that have one (None: none has)."""
        scores = [s for s in self.boots[cell] if s is not None]
        return statistics.fmean(scores) if scores else None

    @property
    def best(self) -> tuple[str, float]:
        scored = {c.name: t for c in self.cells if (t := self.truth(c.name)) is not None}
        if not scored:
            raise ValueError(f"{self.name}: no cell has a score at {self.scenario}")
        name = max(scored, key=lambda n: scored[n])
        return name, scored[name]


def _score(verdict: CellVerdict, scenario: Scenario) -> float | None:
    if verdict.verdict != "green":
        return None
    for r in verdict.results:
        if r.workload == scenario.workload and r.concurrency == scenario.concurrency:
            stat = r.metrics.get(scenario.metric)
            return scenario.sign * stat.mean if r.ok and stat is not None and stat.mean is not None else None
    return None


def _more_boots(campaign_file: Path, levers: dict[str, dict[str, object]]) -> dict[str, list[CellVerdict]]:
    """Another campaign's boots of the same cells (same name, same levers): replicates from a second run."""
    loaded = load_campaign(campaign_file)
    verdicts, replicates = read_boots(loaded.results, loaded.names)
    return {n: [v, *replicates.get(n, [])] for n, v in verdicts.items() if n in levers and dict(v.levers) == levers[n]}


def read_landscape(campaign_file: Path, scenario: Scenario, also: Sequence[Path] = ()) -> Landscape:
    """The landscape a campaign's verdicts on disk draw at one scenario; `also`: campaigns whose boots of the same
    cells count as replicates."""
    loaded = load_campaign(campaign_file)
    verdicts, replicates = read_boots(loaded.results, loaded.names)
    if not verdicts:
        raise ValueError(f"{campaign_file}: no cell has a verdict under {loaded.results}")
    benched = {(r.workload, r.concurrency) for v in verdicts.values() for r in v.results}
    if benched and (scenario.workload, scenario.concurrency) not in benched:
        said = ", ".join(sorted(f"{w + ':' if w else ''}{c}" for w, c in benched))
        raise ValueError(f"{campaign_file}: no cell was benched at {scenario}; its benches: {said}")
    names = [n for n in loaded.names if n in verdicts]
    every = {n: [verdicts[n], *replicates.get(n, [])] for n in names}
    for other in also:
        for n, more in _more_boots(other, {n: dict(verdicts[n].levers) for n in names}).items():
            every[n] += more
    boots = {n: tuple(_score(v, scenario) for v in every[n]) for n in names}
    space = [Candidate(n, dict(verdicts[n].levers)) for n in names]  # as the campaign's search sees them
    raw = {n: [abs(s) for s in b if s is not None] for n, b in boots.items()}
    band = pooled_band(raw, "the boot-to-boot spread of the cells booted twice") or stated_band(
        loaded.campaign.noise_band_pct, "the campaign's noise_band_pct", "no cell was booted twice"
    )
    return Landscape(
        name=loaded.campaign.name,
        scenario=scenario,
        cells=tuple(as_run(c, verdicts[c.name].context.serve, verdicts[c.name].boot.signals, space) for c in space),
        baseline=loaded.baseline if loaded.baseline in verdicts else names[0],
        boots=boots,
        infeasible={  # as a plan judges it now (a verdict may have been judged by an older count of the need)
            n: p.why
            for n, v in verdicts.items()
            if v.predicted is not None and (p := for_need(v.predicted, loaded.campaign.kv_need)).feasible == "no"
        },
        grid=len(loaded.names),
        band=band.pct / 100,
        noise=band.cv,
        band_source=f"{band.pct:.1f}%, {band.basis}: {band.source}",
    )


def shipped() -> tuple[list[tuple[Path, Scenario, tuple[Path, ...]]], list[str]]:
    """Every listed landscape's campaign file, once per scenario, with the campaigns that booted its cells again; and
    the listed ones not recorded yet (no campaign file, or no cell with a verdict), which are left out."""
    runs, missing = [], []
    for listed in LANDSCAPES:
        path = ROOT / listed.campaign
        loaded = load_campaign(path) if path.is_file() else None
        if loaded is None or not read_verdicts(loaded.results, loaded.names):
            missing.append(listed.campaign)
            continue
        runs += [(path, s, tuple(ROOT / a for a in listed.also)) for s in listed.scenarios]
    return runs, missing


def main() -> None:
    parser = argparse.ArgumentParser(description="The landscapes bench/search_replay.py replays, as it reads them.")
    parser.parse_args()
    runs, missing = shipped()
    for name in missing:
        print(f"{name}: not recorded yet (no cell has a verdict)")
    for path, scenario, also in runs:
        land = read_landscape(path, scenario, also)
        name, best = land.best
        boots = sum(len(b) for b in land.boots.values())
        print(
            f"{path.relative_to(ROOT)}: {scenario}: {len(land.cells)} of {land.grid} cells, {boots} boots; "
            f"best {name} ({scenario.sign * best:,.4g}); band {land.band_source}"
        )


if __name__ == "__main__":
    main()
