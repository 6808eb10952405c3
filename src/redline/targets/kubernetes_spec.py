"""The `kubernetes` entry of the targets file: which cluster, and how a server is deployed and reached.

targets:
  h200s:
    kind: kubernetes
    kubeconfig: ~/.kube/config          # absent: kubectl's own default ($KUBECONFIG, ~/.kube/config)
    context: gpu-cluster
    namespace: llm-bench
    experiment_prefix: rl               # names rl-<experiment>-<run>, label redline.dev/experiment=rl-<experiment>
    deploy: pod                         # redline's own pod template, below; or helm (see HelmSpec)
    image: vllm/vllm-openai:v0.11.0
    gpu_resource: nvidia.com/gpu
    gpus: 1
    node_selector: {nvidia.com/gpu.product: NVIDIA-H200}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    scheduler_name: slurm-bridge-scheduler  # a Slurm-managed pool: its scheduler, not Kubernetes' default
    slurm_node_labels: {slinky.slurm.net/managed: "true"}   # nodes Slurm manages (docs/slurm.md)
    volumes:
      - {name: models, host_path: /data/models, mount_path: /models, read_only: true}
      - {name: hf-cache, claim: hf-cache, mount_path: /root/.cache/huggingface}
    reach: port-forward                 # or pod-ip, for a server that listens on 0.0.0.0
    engine_commands: {vllm: [vllm]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from redline.errors import InputError
from redline.targets.kubernetes_names import check_labels, is_dns_subdomain, is_qualified_name
from redline.targets.spec import AbsolutePath, BaseSpec, Command, abspath

DnsLabel = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")]
ValuesPath = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$", max_length=200)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Volume(_Strict):
    """One volume mounted into every pod: a host folder, a PersistentVolumeClaim, or a scratch emptyDir."""

    name: DnsLabel
    mount_path: AbsolutePath
    read_only: bool = False
    host_path: AbsolutePath | None = None
    claim: DnsLabel | None = None
    empty_dir: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if sum([self.host_path is not None, self.claim is not None, self.empty_dir]) != 1:
            raise ValueError(f"volume {self.name!r} needs exactly one of host_path, claim, empty_dir")
        return self


class Toleration(_Strict):
    key: Annotated[str, Field(max_length=316)] | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: Annotated[str, Field(max_length=63)] | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None

    def tolerates(self, taint: dict[str, str]) -> bool:
        """Kubernetes' own matching: the effect (if set), the key (empty with Exists: any), then the value."""
        if self.effect is not None and self.effect != taint.get("effect"):
            return False
        if self.key is None:
            return self.operator == "Exists"
        if self.key != taint.get("key"):
            return False
        return self.operator == "Exists" or (self.value or "") == taint.get("value", "")


class HelmSpec(_Strict):
    """The user's chart, and where in its values redline puts what it owns, per rung or cell.

    argv_path gets the engine's whole argv (program first), which the chart must run as the container's
    command; labels_path gets redline's labels, which the chart must put on its pod (stop, teardown and
    the logs find the pod by them). env_path, when set, gets the engine env as [{name, value}];
    node_selector_path, when set, gets the node to pin to ({kubernetes.io/hostname: NODE}).
    """

    chart: Annotated[str, Field(min_length=1, pattern=r"^[^-\s\x00]")]
    version: Annotated[str, Field(pattern=r"^[^-\s\x00][^\s\x00]*$")] | None = None
    values_file: str | None = None
    argv_path: ValuesPath
    labels_path: ValuesPath
    env_path: ValuesPath | None = None
    node_selector_path: ValuesPath | None = None


class KubernetesSpec(BaseSpec):
    """A namespace of a cluster reached with kubectl (and helm), as the kubeconfig's credentials allow."""

    kind: Literal["kubernetes"]
    kubeconfig: str | None = None
    context: Annotated[str, Field(min_length=1, pattern=r"^[^-\s\x00][^\x00]*$")] | None = None
    namespace: DnsLabel = "default"
    experiment_prefix: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$", max_length=20)] = "redline"
    deploy: Literal["pod", "helm"] = "pod"
    helm: HelmSpec | None = None
    # The engine's image: the server pod's in pod mode; in both modes the toolbox pod's (version, model checks).
    image: Annotated[str, Field(min_length=1, pattern=r"^[^-\s\x00][^\s\x00]*$")] | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    gpu_resource: str = "nvidia.com/gpu"
    gpus: int = Field(1, ge=0, le=64)
    cpu: Quantity | None = None  # requests = limits, so the pod is Guaranteed and its CPUs its own
    memory: Quantity | None = None
    shm_size: Quantity | None = None  # a memory-backed /dev/shm (tensor parallel workers share through it)
    node: str | None = None  # pin every pod here; else pin_node pins them to the first node chosen
    pin_node: bool = True
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    # Slurm-on-Kubernetes: the scheduler a Slurm-managed pool's pods must name (absent: Kubernetes' default),
    # and the labels that mark a node as Slurm's: a default-scheduler GPU pod there would double-book its GPUs.
    scheduler_name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)] | None = None
    slurm_node_labels: dict[str, str] = Field(default_factory=dict)
    volumes: list[Volume] = Field(default_factory=list)
    reach: Literal["port-forward", "pod-ip"] = "port-forward"
    pending_deadline_s: float = Field(600.0, gt=0, le=86400)
    termination_grace_s: int = Field(30, ge=0, le=3600)
    container: DnsLabel = "engine"  # the engine's container (helm: the chart's name for it)
    pod_workdir: AbsolutePath = "/tmp/redline"  # inside the pods: run folders, bench results
    workdir: str | None = None  # on redline's machine: boot logs kept after a pod is gone, manifests
    kubectl: Command = Field(default_factory=lambda: ["kubectl"])
    helm_command: Command = Field(default_factory=lambda: ["helm"])
    toolbox_lifetime_s: int = Field(3600, ge=60, le=86400)

    @field_validator("gpu_resource")
    @classmethod
    def _resource_name(cls, value: str) -> str:
        if not is_qualified_name(value) or "/" not in value:
            raise ValueError(f"{value!r} is not an extended resource name like nvidia.com/gpu")
        return value

    @field_validator("node")
    @classmethod
    def _node_name(cls, value: str | None) -> str | None:
        if value is not None and not is_dns_subdomain(value):
            raise ValueError(f"{value!r} is not a Kubernetes node name")
        return value

    @field_validator("node_selector", "slurm_node_labels")
    @classmethod
    def _selector(cls, value: dict[str, str]) -> dict[str, str]:
        try:
            return check_labels(value, "node labels")
        except InputError as exc:  # pydantic reports a ValueError as the field's error
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _mode_fields(self) -> Self:
        if self.deploy == "helm" and self.helm is None:
            raise ValueError("deploy: helm needs a helm: entry (chart, argv_path, labels_path)")
        if self.deploy == "pod" and self.helm is not None:
            raise ValueError("a helm: entry needs deploy: helm")
        if self.dev_mode and self.helm is not None and self.helm.env_path is None:
            raise ValueError(
                "dev_mode: true sets the engine's env (its dev mode switch) but this chart takes none: set "
                "helm.env_path to where the chart reads a list of {name, value}, or drop dev_mode"
            )
        if self.deploy == "pod" and self.image is None:
            raise ValueError("deploy: pod needs the engine's image (image:)")
        names = [v.name for v in self.volumes]
        if len(set(names)) != len(names) or "redline-run" in names or "dshm" in names:
            raise ValueError(f"volume names must be unique and not redline-run or dshm: {names}")
        return self

    @property
    def slurm_guard(self) -> dict[str, str] | None:
        """The labels of the nodes a pod of this target may not use because Slurm manages their GPUs: a GPU pod
        of Kubernetes' default scheduler there would double-book them. None where no such rule applies."""
        default = self.scheduler_name in (None, "default-scheduler")
        return self.slurm_node_labels if self.slurm_node_labels and self.gpus and default else None

    def resolved(self, base: Path) -> Self:
        # Local files (kubeconfig, chart folder, values file, the workdir) travel with the targets file.
        def program(command: list[str]) -> list[str]:
            first, *rest = command
            return [abspath(first, base) if "/" in first else first, *rest]

        update: dict[str, object] = {"kubectl": program(self.kubectl), "helm_command": program(self.helm_command)}
        if self.kubeconfig:
            update["kubeconfig"] = abspath(self.kubeconfig, base)
        if self.workdir:
            update["workdir"] = abspath(self.workdir, base)
        if self.helm is not None:
            local = self.helm.chart.startswith((".", "/", "~"))
            helm = {"chart": abspath(self.helm.chart, base) if local else self.helm.chart}
            if self.helm.values_file:
                helm["values_file"] = abspath(self.helm.values_file, base)
            update["helm"] = self.helm.model_copy(update=helm)
        return self.model_copy(update=update)
