"""Reading what Slurm's commands print: sinfo's nodes (the preflight), squeue's jobs and steps, sacct's ends,
and `scontrol show job -o` as the fallback where accounting is off. Pure functions, tested on captured texts
(tests/data/slurm/).

Every list is asked for with `-O Field:|,...` (sinfo, squeue) or `-P` (sacct): one record a line, fields split
by `|`, nothing padded or cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ---- the formats redline asks for ----------------------------------------------------------------------------

SINFO_FIELDS = ("NodeList", "StateLong", "Gres", "GresUsed", "CPUsState", "Memory", "AllocMem", "NodeAddr")
SQUEUE_FIELDS: tuple[str, ...] = ("JobId", "Name", "State", "Reason", "NodeList", "Partition", "tres-per-node")
SQUEUE_FIELDS += ("SubmitTime", "StartTime", "Comment", "ReqNodes")
STEP_FIELDS = ("StepId", "StepName", "StepState")
SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "Submit", "Start", "End", "Reason", "Comment")


def format_of(fields: tuple[str, ...]) -> str:
    """The -O argument that prints fields split by '|'."""
    return ",".join(f"{f}:|" for f in fields)


def records(text: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    """One dict per line of `-O Field:|,...` or `sacct -P` output; a header line (sacct's) is skipped."""
    rows = []
    for line in text.splitlines():
        values = line.split("|")
        if len(values) < len(fields) or values[: len(fields)] == list(fields):
            continue
        rows.append({f: ("" if v in ("(null)", "N/A") else v.strip()) for f, v in zip(fields, values, strict=False)})
    return rows


# ---- GPUs, as gres strings count them ------------------------------------------------------------------------

_GRES = re.compile(r"^gpu(?::[^:(]+)?:(\d+)")


def gpu_count(gres: str) -> int:
    """The GPUs a gres list names: `gpu:2`, `gpu:h100:8(S:0-1)`, `gres:gpu:1`, `gpu:(null):1(IDX:0)`; 0 for none."""
    total = 0
    for part in re.split(r",(?![^(]*\))", gres):
        part = part.strip().removeprefix("gres:").removeprefix("gres/").replace("(null):", "")
        found = _GRES.match(part)
        total += int(found.group(1)) if found else 0
    return total


def megabytes(text: str) -> int:
    """A Slurm memory size (`64G`, `500M`, `8000`) in MB."""
    found = re.fullmatch(r"(\d+)([KMGT]?)", text.strip())
    if not found:
        return 0
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[found.group(2)]
    return int(int(found.group(1)) * scale)


# ---- the preflight -------------------------------------------------------------------------------------------

USABLE_STATES = ("idle", "mixed")  # a node that takes a new job now; allocated, drained, down... do not


@dataclass(frozen=True)
class NodeRoom:
    """One node of the partition: its GPUs and what is left of them, its idle CPUs and free memory."""

    name: str
    state: str
    gpus: int
    used: int
    idle_cpus: int
    free_mem: int  # MB
    address: str

    @property
    def free(self) -> int:
        return max(0, self.gpus - self.used)

    def why_not(self, gpus: int, cpus: int, mem: int, exclusive: bool) -> str | None:
        """Why a job asking this much cannot start here now; None when it can."""
        state = self.state.rstrip("*~#!%$@^-+")
        if state not in USABLE_STATES:
            return f"state {self.state}"
        if exclusive and (state != "idle" or self.used):
            return "not idle (exclusive asks the whole node)"
        if self.free < gpus:
            return f"{self.free} GPU(s) free"
        if self.idle_cpus < cpus:
            return f"{self.idle_cpus} CPU(s) idle"
        if self.free_mem < mem:
            return f"{self.free_mem} MB free"
        return None


def node_rooms(sinfo: str) -> list[NodeRoom]:
    """The nodes of `sinfo -N -h -O <SINFO_FIELDS>`, by name (a node in two partitions listed once)."""
    rooms: dict[str, NodeRoom] = {}
    for row in records(sinfo, SINFO_FIELDS):
        cpus = row["CPUsState"].split("/")  # allocated/idle/other/total
        rooms[row["NodeList"]] = NodeRoom(
            name=row["NodeList"],
            state=row["StateLong"],
            gpus=gpu_count(row["Gres"]),
            used=gpu_count(row["GresUsed"]),
            idle_cpus=int(cpus[1]) if len(cpus) == 4 and cpus[1].isdigit() else 0,
            free_mem=megabytes(row["Memory"]) - megabytes(row["AllocMem"] or "0"),
            address=row["NodeAddr"] or row["NodeList"],
        )
    return sorted(rooms.values(), key=lambda r: r.name)


def node_table(rooms: list[NodeRoom], notes: dict[str, str] | None = None) -> str:
    """The nodes as a table a person reads: state, GPUs, free, idle CPUs, free memory, why a node cannot."""
    header = ("node", "state", "gpus", "used", "free", "idle cpus", "free MB", "note")
    notes = notes or {}
    rows = [header] + [
        (
            r.name,
            r.state,
            str(r.gpus),
            str(r.used),
            str(r.free),
            str(r.idle_cpus),
            str(r.free_mem),
            notes.get(r.name, ""),
        )
        for r in rooms
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


@dataclass(frozen=True)
class Ask:
    """What one job asks of a node, and how many of this target's servers a node may run at once (they share its
    ports: two engines on one node and one port would collide)."""

    gpus: int
    cpus: int
    mem: int  # MB, 0: the partition's default
    exclusive: bool
    servers_per_node: int

    def words(self) -> str:
        extra = (f", {self.mem} MB" if self.mem else "") + (", the whole node" if self.exclusive else "")
        return f"{self.gpus} GPU(s), {self.cpus} CPU(s){extra}"


def place(
    rooms: list[NodeRoom], ask: Ask, servers: dict[str, int], waiting: dict[str, int]
) -> tuple[str | None, dict[str, str]]:
    """The node a job asking this much goes to now (of those with room, the most free GPUs, then by name), or
    None; and why each other node cannot take it. servers: this target's live servers per node; waiting: GPUs
    the user's pending jobs ask for, per node they are pinned to ("" for any node), counted as taken."""
    notes: dict[str, str] = {}
    for room in rooms:
        why = room.why_not(ask.gpus + waiting.get(room.name, 0), ask.cpus, ask.mem, ask.exclusive)
        if why is None and servers.get(room.name, 0) >= ask.servers_per_node:
            why = f"runs {servers[room.name]} server(s) of this target (servers_per_node: {ask.servers_per_node})"
        notes[room.name] = why or ""
    fits = [r for r in rooms if not notes[r.name]]
    if sum(r.free - waiting.get(r.name, 0) for r in fits) - waiting.get("", 0) < ask.gpus:
        fits = []
    chosen = min(fits, key=lambda r: (-r.free, r.name)).name if fits else None
    return chosen, notes


# ---- jobs and steps ------------------------------------------------------------------------------------------

ACTIVE_STATES = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT"}
)


@dataclass(frozen=True)
class Job:
    """One job as squeue shows it."""

    job_id: str
    name: str
    state: str
    reason: str
    nodes: str
    partition: str
    gpus: int
    submitted: str
    started: str
    comment: str
    pinned: str = ""  # the node it asked for (--nodelist), if it named one

    @property
    def node(self) -> str:
        """Where it runs, or (pending) the node it is pinned to; "" for a pending job that named none."""
        return self.nodes or self.pinned

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"


def jobs(squeue: str) -> list[Job]:
    """The jobs of `squeue -h -O <SQUEUE_FIELDS>`."""
    return [
        Job(
            job_id=r["JobId"],
            name=r["Name"],
            state=r["State"],
            reason=r["Reason"],
            nodes=r["NodeList"],
            partition=r["Partition"],
            gpus=gpu_count(r["tres-per-node"]),
            submitted=r["SubmitTime"],
            started=r["StartTime"],
            comment=r["Comment"],
            pinned=r["ReqNodes"],
        )
        for r in records(squeue, SQUEUE_FIELDS)
    ]


@dataclass(frozen=True)
class JobStep:
    """One job step as `squeue -s` shows it: `1234.5`, its name and state."""

    job_id: str
    step: str
    name: str
    state: str


def steps(squeue: str) -> list[JobStep]:
    """The steps of `squeue -h -s -O <STEP_FIELDS>` (the batch and extern steps included)."""
    found = []
    for r in records(squeue, STEP_FIELDS):
        job, _, step = r["StepId"].partition(".")
        found.append(JobStep(job_id=job, step=step, name=r["StepName"], state=r["StepState"]))
    return found


# ---- how a job or step ended ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobEnd:
    """How a job (or step) ended, from sacct or scontrol: its state, `ExitCode` (code:signal) and node."""

    job_id: str
    state: str
    exit_code: str
    node: str = ""
    reason: str = ""
    source: str = "sacct"

    @property
    def succeeded(self) -> bool:
        """Slurm's own success: State COMPLETED and ExitCode 0:0."""
        return self.state == "COMPLETED" and self.exit_code == "0:0"

    @property
    def returncode(self) -> int | None:
        """The exit status as a process's: the code, or minus the signal that ended it; None if unknown."""
        code, _, signal = self.exit_code.partition(":")
        if not code.isdigit() or not signal.isdigit():
            return None
        return -int(signal) if int(signal) else int(code)

    @property
    def ended(self) -> bool:
        return self.state.split()[0] not in ACTIVE_STATES if self.state else False


def sacct_end(sacct: str, job_id: str) -> JobEnd | None:
    """The line of `sacct -P -o <SACCT_FIELDS>` for job_id (`1234` or a step `1234.5`), or None."""
    for r in records(sacct, SACCT_FIELDS):
        if r["JobID"] == job_id:
            state = r["State"].split(" by ")[0]  # CANCELLED by 0
            return JobEnd(job_id, state, r["ExitCode"], node=r["NodeList"], reason=r["Reason"])
    return None


_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z/:_]*)=")


def scontrol_fields(text: str) -> dict[str, str]:
    """`scontrol show job -o` as key -> value (a value may hold spaces: it runs to the next ` Key=`)."""
    found = list(_KEY.finditer(text.strip()))
    fields: dict[str, str] = {}
    if not found:
        return fields  # an error message, not a job
    for here, after in zip(found, [*found[1:], None], strict=True):
        end = after.start() if after is not None else len(text.strip())
        fields[here.group(1)] = text.strip()[here.end() : end].strip()
    return fields


def scontrol_end(text: str) -> JobEnd | None:
    """How a job ended by `scontrol show job -o`, the fallback where sacct has nothing; None if it has not."""
    fields = scontrol_fields(text)
    if "JobId" not in fields:
        return None
    return JobEnd(
        fields["JobId"],
        fields.get("JobState", ""),
        fields.get("ExitCode", ""),
        node=fields.get("NodeList", ""),
        reason=fields.get("Reason", ""),
        source="scontrol",
    )


# ---- a job that does not start -------------------------------------------------------------------------------

PENDING_HINTS = {
    "Resources": "the nodes that fit are busy: wait for them, or ask for less (gpus, cpus_per_task, mem)",
    "Priority": "jobs of higher priority are ahead in the queue: wait, or raise pending_deadline_s",
    "PartitionTimeLimit": "time_limit is more than the partition allows: lower time_limit (sinfo -o '%P %l')",
    "PartitionNodeLimit": "the job asks more nodes than the partition allows",
    "ReqNodeNotAvail": "the nodes it may use are down, drained or reserved (sinfo -R)",
    "AssocGrpGRES": "the account's GPU limit is reached: wait for its other jobs, or use another account",
    "QOSMaxGRESPerUser": "the QOS's GPUs per user are all in use: wait, or use another qos",
    "JobHeldUser": "the job is held (redline releases its jobs at once: a release that failed?)",
}


# Slurm's scheduler gives a pending job its reason on its next pass (sched_interval: 60 s by default); until then
# squeue says "None", which tells a person nothing
REASON_GRACE_S = 60.0


def give_up_pending(job: Job, waited_s: float, deadline_s: float) -> bool:
    """Whether a job PENDING past its deadline is cancelled now: once Slurm has said why it waits, or, while it still
    says "None" (its scheduler has not looked at the job yet), REASON_GRACE_S past the deadline."""
    if waited_s <= deadline_s:
        return False
    return job.reason not in ("", "None") or waited_s > deadline_s + REASON_GRACE_S


def pending_message(what: str, waited_s: float, reason: str) -> str:
    """Why a job was cancelled while PENDING: Slurm's reason and what to do about it."""
    key = reason.split(",")[0].split("(")[0].strip()
    hint = PENDING_HINTS.get(key, "see `squeue --start` and `scontrol show job` for why it waits")
    return f"{what} was still PENDING {waited_s:.0f}s after it was submitted; Slurm's reason: {reason or '?'}: {hint}"
