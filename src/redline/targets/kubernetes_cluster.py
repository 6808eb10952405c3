"""Reading a cluster's state as kubectl prints it (`-o json`): a pod's state, the GPUs each node has left,
a pod's events, a node as a host. Pure functions of parsed JSON, tested on texts alone.

The free-GPU preflight is Kubernetes' own arithmetic: a node's allocatable amount of the GPU resource minus
what the scheduled, unfinished pods on it request (an extended resource's request is its limit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redline.targets.base import GpuInfo, HostInfo
from redline.targets.kubernetes_spec import Toleration

DONE_PHASES = ("Succeeded", "Failed")
# A container waiting for one of these will not start by waiting longer.
STUCK_REASONS = frozenset(
    {"ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError"}
)
PRODUCT_LABEL = "nvidia.com/gpu.product"  # set by GPU feature discovery, where it runs
MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB


# ---- one pod -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodState:
    """What a pod is doing, as far as a boot cares."""

    phase: str  # Pending, Running, Succeeded, Failed, Unknown, or Gone (no such pod)
    node: str | None = None
    pod_ip: str | None = None
    running: bool = False  # the engine container runs, in its first life
    exit_code: int | None = None
    stuck: str | None = None  # a waiting reason that no wait will cure, with its message
    name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    restarts: int = 0

    @property
    def gone(self) -> bool:
        return self.phase == "Gone"

    @property
    def exited(self) -> bool:
        """The engine ended: the pod is gone or done, or its container has already restarted once."""
        return self.gone or self.phase in DONE_PHASES or self.restarts > 0

    @property
    def pending(self) -> bool:
        return self.phase == "Pending" and not self.exited


def _engine_status(pod: dict[str, Any], container: str) -> dict[str, Any]:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return next((s for s in statuses if s.get("name") == container), statuses[0] if statuses else {})


def pod_state(pod: dict[str, Any] | None, container: str) -> PodState:
    """The state of pod (None: it is gone), judged by its phase and its engine container."""
    if pod is None:
        return PodState(phase="Gone")
    status = pod.get("status", {})
    engine = _engine_status(pod, container)
    restarts = int(engine.get("restartCount") or 0)
    state = engine.get("state") or {}
    ended = (engine.get("lastState") or {}).get("terminated") if restarts else state.get("terminated")
    waiting = state.get("waiting") or {}
    stuck = None
    if waiting.get("reason") in STUCK_REASONS:
        stuck = f"{waiting['reason']}: {waiting.get('message', '')}".strip(": ")
    return PodState(
        phase=str(status.get("phase") or "Unknown"),
        node=pod.get("spec", {}).get("nodeName"),
        pod_ip=status.get("podIP"),
        running="running" in state and restarts == 0,
        exit_code=int(ended["exitCode"]) if ended and "exitCode" in ended else None,
        stuck=stuck,
        name=pod.get("metadata", {}).get("name"),
        labels=dict(pod.get("metadata", {}).get("labels") or {}),
        restarts=restarts,
    )


def newest(pods: dict[str, Any]) -> dict[str, Any] | None:
    """The newest pod of a `kubectl get pods -o json` list (a chart's controller may have replaced one)."""
    items = [p for p in pods.get("items", []) if not p.get("metadata", {}).get("deletionTimestamp")]
    items = items or pods.get("items", [])
    return max(items, key=lambda p: p.get("metadata", {}).get("creationTimestamp", ""), default=None)


def events_text(events: dict[str, Any], limit: int = 20) -> str:
    """A pod's events, oldest first, one a line: what `kubectl describe` would show under Events."""
    rows = []
    for e in events.get("items", []):
        series = e.get("series") or {}  # events.k8s.io events (the scheduler's) count in a series
        when = e.get("lastTimestamp") or series.get("lastObservedTime") or e.get("eventTime") or ""
        times = int(e.get("count") or 0) or int(series.get("count") or 0) + 1
        count = f" (x{times})" if times > 1 else ""
        rows.append((when, f"{when} {e.get('type', '')} {e.get('reason', '')}{count}: {e.get('message', '')}"))
    lines = [text.strip() for _, text in sorted(rows)][-limit:]
    return "\n".join(lines) if lines else "(no events)"


# ---- the preflight -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRoom:
    """One node's GPUs, and why a pod of this target cannot go there at all (None: it may)."""

    name: str
    allocatable: int
    requested: int
    excluded: str | None = None

    @property
    def free(self) -> int:
        return max(0, self.allocatable - self.requested)


def quantity(value: Any) -> int:
    """A count of an extended resource ("2"); such counts are whole numbers."""
    try:
        return int(str(value))
    except ValueError:
        return int(float(str(value)))


def pod_request(pod: dict[str, Any], resource: str) -> int:
    """What a pod asks of resource: its containers' sum, or its largest init container's if that is more."""

    def one(container: dict[str, Any]) -> int:
        res = container.get("resources") or {}
        amount = (res.get("requests") or {}).get(resource, (res.get("limits") or {}).get(resource, 0))
        return quantity(amount)

    spec = pod.get("spec", {})
    containers = sum(one(c) for c in spec.get("containers") or [])
    inits = max((one(c) for c in spec.get("initContainers") or []), default=0)
    return max(containers, inits)


def _ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _why_excluded(
    node: dict[str, Any],
    selector: dict[str, str],
    tolerations: list[Toleration],
    pinned: str | None,
    slurm: dict[str, str] | None = None,
) -> str | None:
    name = node.get("metadata", {}).get("name", "")
    labels = node.get("metadata", {}).get("labels") or {}
    if pinned is not None and name != pinned:
        return f"not the pinned node {pinned}"
    if slurm and all(labels.get(k) == v for k, v in slurm.items()):
        return "managed by Slurm: a GPU pod of the default scheduler would double-book it (set scheduler_name)"
    if not _ready(node):
        return "not Ready"
    if node.get("spec", {}).get("unschedulable"):
        return "cordoned"
    missing = [f"{k}={v}" for k, v in selector.items() if labels.get(k) != v]
    if missing:
        return f"lacks {', '.join(missing)}"
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in tolerations):
            return f"taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')} not tolerated"
    return None


def node_rooms(
    nodes: dict[str, Any],
    pods: dict[str, Any],
    resource: str,
    *,
    selector: dict[str, str] | None = None,
    tolerations: list[Toleration] | None = None,
    pinned: str | None = None,
    slurm: dict[str, str] | None = None,
) -> list[NodeRoom]:
    """Each node's allocatable and requested amount of resource, by name, and whether this target may use it.
    slurm: the labels of nodes Slurm manages, which a default-scheduler pod asking GPUs may not use."""
    requested: dict[str, int] = {}
    for pod in pods.get("items", []):
        node = pod.get("spec", {}).get("nodeName")
        if node and pod.get("status", {}).get("phase") not in DONE_PHASES:
            requested[node] = requested.get(node, 0) + pod_request(pod, resource)
    rooms = []
    for node in nodes.get("items", []):
        name = node.get("metadata", {}).get("name", "")
        allocatable = quantity((node.get("status", {}).get("allocatable") or {}).get(resource, 0))
        why = _why_excluded(node, selector or {}, tolerations or [], pinned, slurm)
        rooms.append(NodeRoom(name, allocatable, requested.get(name, 0), why))
    return sorted(rooms, key=lambda r: r.name)


def choose_node(rooms: list[NodeRoom], gpus: int) -> str | None:
    """The node a pod asking gpus goes to: of those it may use with room, the most free, then by name."""
    fits = [r for r in rooms if r.excluded is None and r.free >= gpus]
    return min(fits, key=lambda r: (-r.free, r.name)).name if fits else None


def node_table(rooms: list[NodeRoom], resource: str) -> str:
    """The nodes as a table a person reads: allocatable, requested, free, and why a node is out."""
    header = ("node", f"allocatable {resource}", "requested", "free", "note")
    rows = [header] + [(r.name, str(r.allocatable), str(r.requested), str(r.free), r.excluded or "") for r in rooms]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


# ---- a node as a host ----------------------------------------------------------------------------------------


def host_of(node: dict[str, Any], gpus: int) -> HostInfo:
    """A node as the host of a pod asking gpus: its name, its machine id, and those GPUs where feature
    discovery labels their model (no label: no GPU is claimed; the device plugin names no UUIDs here)."""
    meta, status = node.get("metadata", {}), node.get("status", {})
    labels = meta.get("labels") or {}
    product = labels.get(PRODUCT_LABEL)
    memory = labels.get(MEMORY_LABEL, "0")
    cards = [GpuInfo(name=product, memory_mib=int(memory) if memory.isdigit() else 0)] * gpus if product else []
    machine = (status.get("nodeInfo") or {}).get("machineID") or None
    return HostInfo(hostname=meta.get("name", ""), machine_id=machine, gpus=cards)
