"""ladder.yml on disk: load and validate, create, and change it without rewriting history.

The only changes there are: append a rung, fill the LAST rung's smoke test once,
set the ceiling once. `update_ladder` runs a change twice: first on an unlocked
read, so that a refusal touches nothing on disk (not even the lock file), then
under the lock on a fresh read, where it writes the change's side files (a
rung's boot log, its smoke result) before the ladder that names them.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from redline.errors import LadderError
from redline.ledger import yamlfile
from redline.ledger.atomic import atomic_write
from redline.ledger.derived import check_file, derived_dir, derived_file, derived_write
from redline.models.ladder import Ceiling, GpuProfile, Ladder, Rung, SmokeTest

_T = TypeVar("_T")
_HEADER = (
    "redline ladder: one model on one GPU profile. Rungs are append-only (a replay is a new rung);\n"
    "comments you add here are kept. Change it with `redline ladder ...`, not by editing rungs."
)


def runs_dir(path: Path) -> Path:
    return path.parent / f"{path.stem}.runs"


def server_file(path: Path) -> Path:
    """Where the record of the server a ladder left running is kept."""
    return runs_dir(path) / "server.json"


def check_derived(path: Path, next_rung: int | None = None) -> None:
    """Refuse a ladder whose derived paths were tampered with: `<stem>.runs` must be a real folder (not a
    symlink, which could lead out of the workspace), its server.json and the ladder's lock plain files,
    and, given the next rung's index, that rung's folder and boot log too (checked before a boot, not after)."""
    derived_dir(path.parent, runs_dir(path).name)
    derived_file(path.parent, f"{runs_dir(path).name}/server.json")
    check_file(yamlfile.lock_file(path))
    if next_rung is not None:
        derived_file(path.parent, rung_file(path, next_rung, "boot.log"))


def rung_file(path: Path, index: int, name: str) -> str:
    """Where a rung's file goes, relative to the ladder's folder: `<stem>.runs/rung-NNN/<name>`."""
    return (runs_dir(path) / f"rung-{index:03d}" / name).relative_to(path.parent).as_posix()


def dump(ladder: Ladder) -> dict[str, Any]:
    return ladder.model_dump(mode="json", exclude_none=True)


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def validate(doc: Any, path: Path) -> Ladder:
    if not isinstance(doc, Mapping):
        raise LadderError(
            f"{path}: not a ladder (the file must be a YAML mapping); create one with `redline ladder init`"
        )
    try:
        return Ladder.model_validate(yamlfile.plain(doc))
    except ValidationError as exc:
        raise LadderError(
            f"{path}: does not follow the ladder schema: {_first_error(exc)}; "
            "fix it by hand or restore it from version control"
        ) from exc


def read_ladder(path: Path) -> Ladder:
    return validate(yamlfile.load_plain(path), path)


load_ladder = read_ladder


def create_ladder(path: Path, ladder: Ladder) -> None:
    """Write a new ladder; refuse to replace one that exists."""
    if path.exists():
        raise LadderError(f"{path}: a ladder is already there; use it (`redline ladder status`) or move it away first")
    check_derived(path)
    doc = yamlfile.to_yaml(dump(ladder))
    doc.yaml_set_start_comment(_HEADER)
    with yamlfile.locked(path):
        if path.exists():
            raise LadderError(f"{path}: another redline just created it; use it (`redline ladder status`)")
        atomic_write(path, yamlfile.dumps(doc))


def create_adopted(path: Path, doc: Any, new: Ladder, files: Mapping[str, str]) -> None:
    """Write a ladder copied in from elsewhere: its rung files first (relative to its folder), then the ladder, as
    its round-trip document `doc` (its comments kept) changed to `new`; refuse to replace a ladder, or rung
    folders already there."""
    for there in (path, runs_dir(path)):
        if there.exists():
            raise LadderError(f"{there}: already there; adopt the ladder under another name, or move that away first")
    check_derived(path)
    for relative in files:
        derived_file(path.parent, relative)
    with yamlfile.locked(path):
        if path.exists():
            raise LadderError(f"{path}: another redline just created it; use it (`redline ladder status`)")
        for relative, text in files.items():  # folders made here are real ones, checked part by part
            atomic_write(derived_file(path.parent, relative, create=True), text)
        yamlfile.merge(doc, yamlfile.plain(doc), dump(new))
        atomic_write(path, yamlfile.dumps(doc))


@dataclass
class Change(Generic[_T]):
    """A changed ladder, what the caller returns, and side files (relative to the ladder's folder) to write first."""

    ladder: Ladder
    result: _T
    files: dict[str, str] = field(default_factory=dict)


def update_ladder(path: Path, change: Callable[[Ladder], Change[_T]]) -> _T:
    """Apply `change` as one locked read-modify-write; history is never rewritten."""
    text = yamlfile.read(path)
    doc = yamlfile.parse(text, path)
    old = validate(doc, path)
    check_derived(path)
    for relative in change(old).files:  # dry run: a refusal raises here, before anything is touched
        derived_file(path.parent, relative)
    with yamlfile.locked(path):
        if (fresh := yamlfile.read(path)) != text:  # another writer got in first: start from its file
            doc = yamlfile.parse(fresh, path)
            old = validate(doc, path)
        done = change(old)
        check_append_only(old, done.ladder)
        yamlfile.remove_stale_temps(path)
        for relative, text in done.files.items():  # folders made here are real ones, checked part by part
            derived_write(path.parent, relative, text)
        yamlfile.merge(doc, dump(old), dump(done.ladder))
        atomic_write(path, yamlfile.dumps(doc))
    return done.result


# -- pure changes ----------------------------------------------------------------------------------


def append_rung(ladder: Ladder, rung: Rung) -> Ladder:
    if rung.index != len(ladder.rungs) + 1:
        raise LadderError(f"rung {rung.index} is out of order: the next rung is {len(ladder.rungs) + 1}")
    return ladder.model_copy(update={"rungs": [*ladder.rungs, rung]})


def set_smoke_test(ladder: Ladder, smoke: SmokeTest) -> Ladder:
    if not ladder.rungs:
        raise LadderError("the ladder has no rung to smoke-test: record a boot first")
    last = ladder.rungs[-1]
    if not last.status.booted:
        raise LadderError(f"rung {last.index} did not boot ({last.status.value}): there is no server to smoke-test")
    if last.smoke_test.attempted:
        raise LadderError(
            f"rung {last.index} already has its smoke test ({last.smoke_test.outcome}): "
            f"replay it (`redline ladder next --replay {last.index}`) to test it again"
        )
    rung = Rung.model_validate({**last.model_dump(), "smoke_test": smoke.model_dump()})
    return ladder.model_copy(update={"rungs": [*ladder.rungs[:-1], rung]})


def set_ceiling(ladder: Ladder, ceiling: Ceiling) -> Ladder:
    if ladder.ceiling is not None:
        raise LadderError(
            f"the ceiling is already recorded (max_model_len {ladder.ceiling.max_model_len:,}): "
            "start a new ladder to climb again"
        )
    return Ladder.model_validate({**ladder.model_dump(), "ceiling": ceiling.model_dump()})


def set_gpu(ladder: Ladder, gpu: GpuProfile) -> Ladder:
    if ladder.gpu is not None:
        raise LadderError("the ladder's GPU profile is already set: one ladder is one GPU profile")
    return ladder.model_copy(update={"gpu": gpu})


def set_host(path: Path, host: Any) -> Ladder:
    """Fill an unknown GPU profile from a target's host (`.gpus`: `.name`, `.memory_mib`); no GPU seen, no change."""
    gpus = list(getattr(host, "gpus", []) or [])
    if not gpus:
        return read_ladder(path)
    profile = GpuProfile(name=gpus[0].name, memory_gib=round(gpus[0].memory_mib / 1024, 1), count=len(gpus))

    def change(ladder: Ladder) -> Change[Ladder]:
        updated = ladder if ladder.gpu is not None else set_gpu(ladder, profile)
        return Change(updated, updated)

    return update_ladder(path, change)


def set_deployment_compile_cache(path: Path, persists: bool) -> Ladder:
    """Fill a ladder's unsaid deployment compile cache from its target: warm where the target keeps it between
    boots, else cold; a ladder that says it already keeps its own."""

    def change(ladder: Ladder) -> Change[Ladder]:
        if ladder.deployment_compile_cache is not None:
            return Change(ladder, ladder)
        updated = ladder.model_copy(update={"deployment_compile_cache": "warm" if persists else "cold"})
        return Change(updated, updated)

    return update_ladder(path, change)


def check_append_only(old: Ladder, new: Ladder) -> None:
    """Raise unless `new` only appends rungs, fills the last rung's smoke test once, or sets the ceiling."""
    before, after = dump(old), dump(new)
    for key in set(before) | set(after):
        if key in ("gpu", "engine_version", "joint", "deployment_compile_cache") and key not in before:
            continue  # an unknown GPU profile, engine version, the predict policy's plan and the deployment's
            # compile cache (its target's) are filled in once
        if (
            key == "model"
            and "shape" not in before[key]
            and {**after[key], "shape": None} == {**before[key], "shape": None}
        ):
            continue  # so is the model's shape (read on the target at the first boot)
        if key not in ("rungs", "ceiling") and before.get(key) != after.get(key):
            raise LadderError(f"refused: a change would rewrite the ladder's {key}")
    if "ceiling" in before and before["ceiling"] != after.get("ceiling"):
        raise LadderError("refused: a change would rewrite the recorded ceiling")
    old_rungs, new_rungs = before["rungs"], after["rungs"]
    if len(new_rungs) < len(old_rungs):
        raise LadderError("refused: a change would remove rungs")
    for i, (was, now) in enumerate(zip(old_rungs, new_rungs, strict=False)):
        if was == now:
            continue
        smoke_filled = (
            i == len(old_rungs) - 1
            and not was["smoke_test"]["attempted"]
            and {**was, "smoke_test": None} == {**now, "smoke_test": None}
        )
        if not smoke_filled:
            raise LadderError(f"refused: a change would rewrite rung {was['index']}; history is append-only")
