"""Building context descriptors: from a run's own facts (serve config, host, engine, workload), and reading the
model's config.json where it can be read (here, or on the target), for its hash, quantization and shape.

    files = await model_files(target, config.model)          # config.json read where the model lives
    ctx = descriptor(config, files=files, host=host, engine="vllm", engine_version="0.26.0", ...)
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.engines import get_engine
from redline.errors import InputError, RedlineError
from redline.models.boot import CompileCache
from redline.models.context import (
    BenchIdentity,
    ContextDescriptor,
    EngineIdentity,
    Hardware,
    ModelIdentity,
    Node,
    Parallelism,
    Provenance,
    Workload,
    regime_of,
)
from redline.models.serve import ServeConfig, flag_value, gpus_of
from redline.models.shape import ConfigValueError, ModelShape, shape_of
from redline.targets import HostInfo, Target
from redline.untrusted import load_json, read_regular

CONFIG_JSON = "config.json"
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class ModelFiles:
    """What the model's config.json says, where it could be read."""

    config: dict[str, Any] | None
    config_hash: str | None
    why: str = ""  # why it could not be read

    @property
    def shape(self) -> tuple[ModelShape | None, str]:
        if self.config is None:
            return None, self.why or "config.json was not readable"
        try:
            return shape_of(self.config)
        except ConfigValueError as exc:  # a value of the wrong kind or size: its one line
            return None, str(exc)


def _is_path(model: str) -> bool:
    return model.startswith(("/", ".", "~"))


def files_from_text(text: str) -> ModelFiles:
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    try:
        data = load_json(text, CONFIG_JSON)
    except InputError as exc:  # not JSON, nested past the parser, a number too long to build
        return ModelFiles(None, digest, str(exc))
    if not isinstance(data, dict):
        return ModelFiles(None, digest, f"{CONFIG_JSON} is not a JSON object")
    return ModelFiles(data, digest)


def read_config(folder: str) -> str | None:
    """The text of the config.json of a model folder on this machine, or None where it has none; InputError where it
    cannot be read. Through the one untrusted reader: a link is followed (a hub cache links to its blobs), but only
    a regular file is read, checked on the opened file, at most MAX_CONFIG_BYTES + 1 bytes; a FIFO or a device (a
    link to /dev/zero) is refused at once."""
    path = Path(folder).expanduser() / CONFIG_JSON
    try:
        return read_config_file(path, str(path))
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_config_file(path: Path, what: str) -> str:
    """A config.json's text, the one way redline reads one on this machine: a model folder's (read_config) or one a
    person gives by file (`model_config_file`). At most config.json's own cap (MAX_CONFIG_BYTES, 1 MiB) through the
    untrusted reader: a FIFO, a device or a file over the cap refused at once, naming `what`. A missing file is
    FileNotFoundError (or NotADirectoryError), the caller's to word; any other OSError is InputError."""
    try:
        return read_regular(path, MAX_CONFIG_BYTES, what)
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError as exc:
        raise InputError(f"{what}: {exc.strerror or exc}") from exc


def local_model_files(model: str) -> ModelFiles:
    """config.json of a model folder on this machine; nothing for a hub id or an unreadable folder."""
    if not _is_path(model):
        return ModelFiles(None, None, f"{model} is a hub id, not a folder redline can read")
    try:
        text = read_config(model)
    except InputError as exc:
        return ModelFiles(None, None, str(exc))
    if text is None:
        return ModelFiles(None, None, f"{Path(model).expanduser() / CONFIG_JSON}: no such file")
    return files_from_text(text)


async def model_files(target: Target, model: str) -> ModelFiles:
    """config.json of the model, read on the target where it is served (a hub id: nothing to read)."""
    if not _is_path(model):
        return ModelFiles(None, None, f"{model} is a hub id, not a folder redline can read")
    try:
        text = await target.read_text(posixpath.join(model, CONFIG_JSON), MAX_CONFIG_BYTES)
    except RedlineError as exc:
        return ModelFiles(None, None, f"{model}/{CONFIG_JSON} on {target.name}: {exc}")
    return files_from_text(text)


def quantization_of(config: ServeConfig, files: ModelFiles) -> str | None:
    """The weights' quantization: the serve flag first, else config.json's quantization_config."""
    given = flag_value(config.extra_flags, "--quantization")
    if given:
        return given
    q = (files.config or {}).get("quantization_config")
    return _word(q.get("quant_method") if isinstance(q, dict) else None, 64)


def _word(value: object, longest: int) -> str | None:
    """A config.json name the context records (a dtype, a quantization method): a string that fits, else unknown."""
    return value if isinstance(value, str) and 0 < len(value) <= longest else None


def node_of(host: HostInfo | None) -> Node | None:
    if host is None:
        return None
    return Node(hostname=host.hostname, machine_id=host.machine_id, gpu_uuids=host.gpu_uuids)


def hardware_of(config: ServeConfig, host: HostInfo | None) -> Hardware:
    if host is None or not host.gpus:
        return Hardware()
    first = host.gpus[0]
    return Hardware(gpu_name=first.name, gpu_memory_gib=round(first.memory_mib / 1024, 1), gpu_count=gpus_of(config))


def model_identity_of(config: ServeConfig, files: ModelFiles) -> ModelIdentity:
    return ModelIdentity(
        name=config.model,
        config_hash=files.config_hash,
        quantization=quantization_of(config, files),
        dtype=_word((files.config or {}).get("torch_dtype"), 32),
    )


def _bench_identity(engine: str, engine_version: str | None, backend: str | None) -> BenchIdentity:
    """The client that benched it: the engine's own, or the one named by its bench_client (SGLang: vLLM's)."""
    client = get_engine(engine).bench_client
    return BenchIdentity(client=client, backend=backend, version=engine_version if client == engine else None)


def descriptor(
    config: ServeConfig,
    *,
    files: ModelFiles,
    host: HostInfo | None,
    engine: str,
    engine_version: str | None,
    workload: Workload,
    warmup_requests: int,
    trials: int,
    bench_backend: str | None = None,
    provenance: Provenance = "measured",
    baseline: str | None = None,
    node: Node | None = None,
    warm: bool | None = None,
    compile_cache: CompileCache | None = None,
) -> ContextDescriptor:
    """The full context of a figure measured with `config` on `host`, after `warmup_requests` warm-up requests;
    `warm`: whether the server had served anything before this figure's bench (default: it was warmed up);
    `compile_cache`: the torch.compile cache its boot found, as the boot's log says."""
    return ContextDescriptor(
        provenance=provenance,
        model=model_identity_of(config, files),
        hardware=hardware_of(config, host),
        kv_cache_dtype=config.kv_cache_dtype or "auto",
        parallelism=Parallelism(
            tp=config.tensor_parallel_size, dp=config.data_parallel_size, pp=config.pipeline_parallel_size
        ),
        serve=config,
        workload=workload,
        regime=regime_of(config, int(warm) if warm is not None else warmup_requests, compile_cache),
        engine=EngineIdentity(name=engine, version=engine_version),
        bench=_bench_identity(engine, engine_version, bench_backend),
        trials=trials,
        warmup_requests=warmup_requests,
        node=node if node is not None else node_of(host),
        baseline=baseline,
    )


__all__ = [
    "ModelFiles",
    "descriptor",
    "files_from_text",
    "hardware_of",
    "local_model_files",
    "model_files",
    "model_identity_of",
    "read_config",
    "node_of",
    "quantization_of",
]
