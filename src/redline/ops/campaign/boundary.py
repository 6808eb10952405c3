"""A cell's load boundary (campaign `boundary:`, focus goodput), probed on its running server after the listed
concurrencies and rates: each next concurrency (or rate, `by: rate`) is the one policy/load_boundary.py asks for, given
every bench so far, each a bench of the one workload policy (its own seed, the prompt floor) run by the one loop
(ops/measured_boot.py).
The cell's verdict reads the boundary back from its benches (ops/campaign/verdict.py), so a bench kept and a bench
read say the same."""

from __future__ import annotations

from collections.abc import Callable

from redline.models import ServeConfig
from redline.models.campaign import Campaign
from redline.models.load_boundary import Axis, BoundarySpec
from redline.models.workloads import Load, load_of
from redline.ops.measured_boot import BenchOutcome, Then, run_benches
from redline.ops.session import ServeSession
from redline.policy import load_boundary
from redline.policy.figures import metrics_of
from redline.policy.trace_replay import replay_rows
from redline.policy.workload import Bench, bench_file, bench_workload, goodput_slo
from redline.targets import ServerHandle


def probes_of(
    results: list[BenchOutcome], config: ServeConfig, sla: dict[str, float], by: Axis = "concurrency"
) -> list[load_boundary.Probe]:
    """Every ranked bench on the probed axis as a probe: one that measured nothing usable did not hold; one whose
    client could not send its rate is not judged."""
    return [
        load_boundary.probe(
            at,
            metrics_of(r.figures, config) if r.figures is not None and r.problem is None else None,
            sla,
            next((c.said for c in r.checks if c.check == "rate" and not c.ok), None),
        )
        for r in results
        if r.bench.ranked and (at := r.bench.workload.rate if by == "rate" else r.bench.workload.concurrency)
    ]


def probe_bench(campaign: Campaign, at: Load | int, results: list[BenchOutcome], why: str) -> Bench:
    """The bench at a load (a concurrency, or a rate) that comes after `results` on the server: its repeat number, its
    own seed."""
    point = at if isinstance(at, Load) else Load(concurrency=at)
    repeat = 1 + sum(1 for r in results if r.bench.ranked and load_of(r.bench.workload) == point)
    benches = sum(1 for r in results if r.bench.ranked)
    name = bench_file(point, repeat, max(repeat, campaign.repeats))
    shape = campaign.shape(None)
    workload = bench_workload(shape, point, benches, name)
    replay = replay_rows(shape.replayed, point) if shape.dataset == "trace" else None
    slo = goodput_slo(campaign.sla) if point.open_loop else None
    return Bench(name, workload, f"load boundary: {why}", repeat=repeat, slo=slo, replay=replay)


def boundary_probes(
    session: ServeSession,
    config: ServeConfig,
    campaign: Campaign,
    spec: BoundarySpec,
    *,
    deadline_s: float,
    write: Callable[[str, str], object],
) -> Then:
    """The measured boot's `then`: probe until the boundary is known, the server cannot take another bench, or the
    spec's most benches have run."""
    sla = campaign.latency_sla

    async def probe(handle: ServerHandle, done: list[BenchOutcome]) -> list[BenchOutcome]:
        ran: list[BenchOutcome] = []
        while len(ran) < spec.most_benches:
            found = load_boundary.next_probe(probes_of([*done, *ran], config, sla, spec.by), sla, spec)
            if not isinstance(found, load_boundary.Next):
                break
            step = probe_bench(campaign, found.load, [*done, *ran], found.why)
            [result] = await run_benches(session, handle, config, [step], deadline_s=deadline_s, write=write)
            ran.append(result)
            if not result.server_usable:
                break
        return ran

    return probe


__all__ = ["boundary_probes", "probe_bench", "probes_of"]
