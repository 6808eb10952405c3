"""Boot a list of serve configs on this host's GPU with redline's own session, keep each boot log, and write the
corpus manifest (boots.yml) the memory model learns from (how src/redline/data/boots/vllm-0.26.0-h200/ grew).

    python3 scripts/gpu-calibrate.py OUT_DIR MODELS_DIR PLAN.yml [--stop-after SECONDS]

PLAN.yml lists boots: `- {model: KEY, serve: {max_model_len: N, max_num_batched_tokens: N, ...}}`, each KEY a
model folder under MODELS_DIR (config.json and tokenizer; weights come from --load-format dummy). Each boot is
stopped as soon as it is ready (or has failed); its log is OUT_DIR/<model>_<n>.log and OUT_DIR/boots.yml gains its
row. A boot already in boots.yml is not booted again, so a call cut short resumes on the next run. Needs `vllm`
on PATH and redline importable (PYTHONPATH=src).

A row may add `compile_cache: cold` (vLLM's torch.compile cache, ~/.cache/vllm/torch_compile_cache, is emptied just
before the boot) or `warm` (booted on the cache as the rows before it left it: put it right after its cold twin).
The manifest records the state the boot log shows (cold, warm or unused: the engine's reader), whatever was asked.
"""

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
from gpu_common import ENGINE_ENV, add_run_options, engine_commands, progress
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.models import ServeConfig
from redline.ops.session import ServeSession
from redline.targets import LocalTarget

yaml = YAML(typ="safe", pure=True)
yaml.default_flow_style = None


def _manifest(out: Path, engine: str) -> dict[str, Any]:
    path = out / "boots.yml"
    if path.exists():
        return dict(yaml.load(path.read_text()))
    return {"engine": engine, "engine_version": None, "gpu": None, "boots": []}


COMPILE_CACHE = Path.home() / ".cache" / "vllm" / "torch_compile_cache"


async def boot_one(session: ServeSession, models: Path, row: dict[str, Any], log: Path) -> dict[str, Any]:
    config = ServeConfig.model_validate({"model": str(models / row["model"]), "load_format": "dummy", **row["serve"]})
    if row.get("compile_cache") == "cold":
        shutil.rmtree(COMPILE_CACHE, ignore_errors=True)
    t0 = time.monotonic()
    boot = await session.boot(config, deadline_s=900)
    if boot.ready:
        await session.stop(boot.handle)
    log.write_text(boot.log_text)
    s = boot.signals
    print(
        f"{log.name}: {s.status.value} in {time.monotonic() - t0:.0f}s; KV {s.available_kv_cache_gib} GiB, "
        f"{s.kv_cache_tokens} tokens; {s.memory}",
        flush=True,
    )
    said = {"compile_cache": s.compile_cache} if "compile_cache" in row else {}  # as the boot log says
    if said and said["compile_cache"] != row["compile_cache"]:
        print(f"{log.name}: asked {row['compile_cache']}, the log shows {said['compile_cache']}", flush=True)
    return {"log": log.name, "model": row["model"], "serve": row["serve"], "status": s.status.value, **said}


async def main(args: argparse.Namespace) -> None:
    commands = engine_commands(args.engine_command)
    target = LocalTarget("local", workdir=str(args.out / "work"), engine_env=ENGINE_ENV, engine_commands=commands)
    plan = yaml.load(args.plan.read_text())
    manifest = _manifest(args.out, args.engine)
    done = {_key(b) for b in manifest["boots"]}
    async with target:
        host = await target.host_info()
        if host.gpus:
            manifest["gpu"] = {"name": host.gpus[0].name, "memory_gib": round(host.gpus[0].memory_mib / 1024, 1)}
        session = ServeSession(target, get_engine(args.engine), progress)
        with anyio.move_on_after(args.stop_after):
            for n, row in enumerate(plan, start=1):
                if _key(row) in done:
                    continue
                log = args.out / f"{row['model']}_{n:02d}.log"
                manifest["boots"].append(await boot_one(session, args.models, row, log))
                (args.out / "boots.yml").write_text(_dump(manifest))
    print(f"{len(manifest['boots'])} of {len(plan)} boots recorded in {args.out / 'boots.yml'}", flush=True)


def _key(row: dict[str, Any]) -> tuple[str, str, str | None]:
    """A boot of the plan, as the manifest records it: its model, its serve config and the compile cache it booted
    on (a warm boot recorded cold, on a fresh machine, does not stand for the warm one)."""
    return row["model"], repr(sorted(row["serve"].items())), row.get("compile_cache")


def _dump(doc: dict[str, Any]) -> str:
    import io

    buffer = io.StringIO()
    yaml.dump(doc, buffer)
    return buffer.getvalue()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("models", type=Path)
    parser.add_argument("plan", type=Path)
    parser.add_argument("--engine", default="vllm")
    add_run_options(parser)
    args = parser.parse_args()
    args.out, args.models = args.out.resolve(), args.models.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    anyio.run(main, args)
