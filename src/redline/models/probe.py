"""A load-boundary probe: cells of a campaign, each booted once, warmed up and probed for the highest load whose
latency SLA holds (policy/load_boundary.py), an experiment of its own (ops/campaign/probe.py).

campaigns/<name>/probes/cells/<cell>/boundary.yml    one cell's boot and the boundary its probes found; written last
"""

from pydantic import Field

from redline.models.campaign_plan import CellPlan
from redline.models.load_boundary import LoadBoundary
from redline.models.serve import ServeConfig
from redline.models.strict import Strict


class ProbeRecord(Strict):
    """One cell probed: the config it booted, whether the boot and its warm-up held, the boundary its probes found."""

    campaign: str
    cell: str
    engine: str
    serve: ServeConfig
    ok: bool = Field(description="the boot and its warm-up held, and at least one probe was benched")
    reason: str
    boundary: LoadBoundary | None = None
    benches: int = Field(description="the probes benched on the cell's one boot")
    wall_s: float


class ProbeResult(Strict):
    """What a probe answers: each cell probed and its boundary (a dry run: each cell as it will boot, nothing
    started), and what to do next."""

    campaign: str
    dry_run: bool
    planned: list[CellPlan] = Field([], description="dry run: each cell as it boots (the known-good entry applied)")
    probed: list[ProbeRecord] = Field([], description="the cells this run probed, in order")
    summary: str
    next: str


__all__ = ["ProbeRecord", "ProbeResult"]
