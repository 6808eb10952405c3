"""Names and labels of what redline makes on a cluster, by Kubernetes' own rules. Pure functions.

Every object carries MANAGED_BY, the experiment label (`<prefix>-<ladder, campaign or A/B id>`), the run
label (the run folder's id, unique per server) and the target's name. Object names are
`<prefix>-<experiment>-<8 hex of the run id>`: experiment-prefixed, new per run, and short enough for a
Helm release (53 characters).
"""

from __future__ import annotations

import re

from redline.errors import InputError
from redline.targets.base import NO_EXPERIMENT

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = "redline"
EXPERIMENT_KEY = "redline.dev/experiment"
RUN_KEY = "redline.dev/run"
TARGET_KEY = "redline.dev/target"
ROLE_KEY = "redline.dev/role"  # server | toolbox
EXCLUSIVE_KEY = "redline.dev/exclusive"
LOG_KEY = "redline.dev/log"  # the boot log's name in the run folder: what `kubectl logs` stands for
RELEASE_KEY = "redline.dev/release"  # the Helm release that made the pod (helm mode)

MAX_RELEASE = 53  # Helm's limit on a release name; pod names use it too, so both modes name alike

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def is_dns_label(value: str) -> bool:
    """RFC 1123 label: namespaces, container and volume names (63 at most)."""
    return len(value) <= 63 and bool(_DNS_LABEL.match(value))


def is_dns_subdomain(value: str) -> bool:
    """RFC 1123 subdomain: pod and node names (253 at most)."""
    return 0 < len(value) <= 253 and all(_DNS_LABEL.match(part) for part in value.split("."))


def is_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_LABEL_NAME.match(value)))


def is_qualified_name(value: str) -> bool:
    """A label key or an extended resource name: `[prefix/]name`, prefix a DNS subdomain."""
    prefix, slash, name = value.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return len(name) <= 63 and bool(_LABEL_NAME.match(name))


def check_dns_label(value: str, what: str) -> str:
    if not is_dns_label(value):
        raise InputError(f"{what} {value!r} is not a Kubernetes name: lowercase letters, digits and '-', 63 at most")
    return value


def check_labels(labels: dict[str, str], what: str = "labels") -> dict[str, str]:
    bad = [f"{k}={v}" for k, v in labels.items() if not (is_qualified_name(k) and is_label_value(v))]
    if bad:
        raise InputError(f"{what} break Kubernetes' label rules (keys [prefix/]name, values 63 at most): {bad}")
    return labels


def slug(value: str, limit: int) -> str:
    """value as a DNS label of at most `limit` characters: lowercased, other runs of characters made '-'."""
    text = _NOT_SLUG.sub("-", value.lower()).strip("-")[:limit].strip("-")
    return text or "x"


def experiment_value(prefix: str, experiment: str | None) -> str:
    """The experiment label's value: the target's prefix and the ladder, campaign or A/B id."""
    return f"{prefix}-{slug(experiment or NO_EXPERIMENT, 62 - len(prefix))}"


def run_suffix(run_id: str) -> str:
    """The random part of a run id (`20261201T120000Z-1a2b3c4d` -> `1a2b3c4d`)."""
    return run_id.rsplit("-", 1)[-1].lower()


def object_name(prefix: str, experiment: str | None, run_id: str) -> str:
    """`<prefix>-<experiment>-<run>`: a pod or Helm release name, new per run, 53 characters at most."""
    tail = run_suffix(run_id)
    room = MAX_RELEASE - len(prefix) - len(tail) - 2
    return f"{prefix}-{slug(experiment or NO_EXPERIMENT, room)}-{tail}"


def toolbox_name(prefix: str, target: str) -> str:
    """The one toolbox pod of a target (version probes, model checks): no experiment, no GPU."""
    return f"{prefix}-tools-{slug(target, MAX_RELEASE - len(prefix) - 7)}"


def target_value(target: str) -> str:
    """A target's name as a label value (targets-file names allow what label values do, but not their length)."""
    value = target[:63].rstrip("-_.")
    return value if is_label_value(value) else slug(target, 63)


def labels_of(
    prefix: str,
    experiment: str | None,
    target: str,
    run_id: str,
    *,
    log_name: str,
    exclusive: bool,
    release: str | None = None,
) -> dict[str, str]:
    """The labels of one server: what teardown, stop, the logs and the busy check select on."""
    if not is_label_value(log_name) or not log_name:
        raise InputError(
            f"a boot log on a kubernetes target is a plain file name (letters, digits, . - _): {log_name!r}"
        )
    labels = {
        MANAGED_BY_KEY: MANAGED_BY,
        EXPERIMENT_KEY: experiment_value(prefix, experiment),
        RUN_KEY: run_id,
        TARGET_KEY: target_value(target),
        ROLE_KEY: "server",
        EXCLUSIVE_KEY: "true" if exclusive else "false",
        LOG_KEY: log_name,
    }
    return check_labels({**labels, RELEASE_KEY: release} if release else labels)


def toolbox_labels(target: str) -> dict[str, str]:
    return {MANAGED_BY_KEY: MANAGED_BY, TARGET_KEY: target_value(target), ROLE_KEY: "toolbox"}


def selector(labels: dict[str, str], *, managed_by: bool = True) -> str:
    """A label selector (`-l`) matching all of labels, which must name a run or a target: only redline sets
    those, so nothing it did not label is ever selected. managed_by adds MANAGED_BY too; Helm stamps its own
    value over it on what a chart makes, so helm mode selects by redline's own labels alone."""
    if RUN_KEY not in labels and TARGET_KEY not in labels:
        raise InputError(f"a selector of redline's must name {RUN_KEY} or {TARGET_KEY}, not only {sorted(labels)}")
    pairs = {MANAGED_BY_KEY: MANAGED_BY, **check_labels(labels)} if managed_by else check_labels(labels)
    return ",".join(f"{k}={v}" for k, v in pairs.items())
