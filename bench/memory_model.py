"""Predicted against observed for every boot log redline ships, per GPU, each with its own architecture left out of
the calibration: the KV tokens and every term, and the worst error per term. A GPU's boots are also predicted from
the other GPUs' boots alone (what a user on a GPU redline has never seen gets: its reserve from nvidia-smi), and
after its own (every other boot, this GPU's included: each boot left out of its own prediction). Each boot is
predicted in the torch.compile cache state its log says it booted in (cold, warm, or unused: eager), and each table
ends with its worst error by that state; the last table puts every GPU's side by side, own architecture left out.
Figures, not a test (tests/engines/test_memory_model.py, test_memory_gpus.py and test_compile_state.py hold the
lines).

    python bench/memory_model.py [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from redline.engines import get_engine  # noqa: E402
from redline.models.memory import MemoryPrediction, Observation  # noqa: E402
from redline.models.serve import is_eager  # noqa: E402
from redline.ops.predict.corpus import shipped  # noqa: E402

TERMS = (
    ("weights", "weights_gib", "weights_gib"),
    ("activation", "activation_gib", "peak_activation_gib"),
    ("non-torch", "non_torch_gib", "non_torch_gib"),
    ("cuda graphs", "cuda_graph_gib", "cudagraph_gib"),
)
Training = Callable[[Observation], list[Observation]]
STATES = ("cold", "warm", "unused", "not said")


def left_out(o: Observation) -> list[Observation]:
    """Every shipped boot of the engine but those of the boot's own architecture."""
    return [x for x in shipped(o.engine) if x.shape != o.shape]


def own_boot_left_out(o: Observation) -> list[Observation]:
    """Every shipped boot of the engine but this one: its GPU's other boots calibrate it (a GPU "after its own")."""
    return [x for x in shipped(o.engine) if x.source != o.source]


def other_gpus(o: Observation) -> list[Observation]:
    """The shipped boots of the engine on other GPUs, of other architectures too."""
    return [x for x in left_out(o) if x.gpu is not None and o.gpu is not None and x.gpu.name != o.gpu.name]


def state(o: Observation) -> str:
    """The torch.compile cache the boot found, as its log says (an eager config: unused)."""
    return "unused" if is_eager(o.serve) else o.signals.compile_cache or "not said"


def predicted(o: Observation, training: Training) -> MemoryPrediction:
    """The boot predicted in its own compile state, calibrated on `training`."""
    model = get_engine(o.engine).memory_model()
    cal = model.calibrate(training(o), gpu=o.gpu)
    return model.predict(
        o.shape,
        o.serve,
        o.gpu,
        cal,
        model=o.architecture,
        architecture=o.architecture,
        version=None,
        compile_cache=o.signals.compile_cache,
    )


def error(o: Observation, p: MemoryPrediction) -> float:
    real = o.signals.kv_cache_tokens or 0
    return 100 * (p.kv_cache_tokens - real) / real


def by_state(errors: dict[str, list[float]]) -> str:
    """The worst |error| per compile state, and how many boots each has."""
    return ", ".join(f"{s} {max(map(abs, e)):.2f}% ({len(e)})" for s in STATES if (e := errors.get(s)))


def table(title: str, boots: list[Observation], training: Training, sep: str) -> dict[str, list[float]]:
    """One row a boot, the worst error per term and per compile state; the errors by state (for the summary)."""
    print(f"\n{title}")
    heads = ["boot", "compile", "predicted KV tokens", "observed", "error", "inside band", *(t[0] for t in TERMS)]
    print(sep.join(heads))
    worst: dict[str, float] = {"kv tokens %": 0.0, **{t[0] + " GiB": 0.0 for t in TERMS}}
    errors: dict[str, list[float]] = {}
    for o in boots:
        p, real = predicted(o, training), o.signals.kv_cache_tokens or 0
        worst["kv tokens %"] = max(worst["kv tokens %"], abs(error(o, p)))
        errors.setdefault(state(o), []).append(error(o, p))
        cells = []
        for name, guess, seen in TERMS:
            a, b = getattr(p.terms, guess), getattr(o.signals.memory, seen)
            if a is None or b is None:
                cells.append("-")
                continue
            worst[name + " GiB"] = max(worst[name + " GiB"], abs(a - b))
            cells.append(f"{a:.2f} vs {b:.2f}")
        inside = p.kv_cache_tokens_low <= real <= p.kv_cache_tokens_high
        row = [o.source, state(o), f"{p.kv_cache_tokens:,}", f"{real:,}", f"{error(o, p):+.2f}%", str(inside)]
        print(sep.join([*row, *cells]))
    print("worst: " + ", ".join(f"{k} {v:.2f}" for k, v in worst.items()))
    print("worst kv tokens % by compile state (boots): " + by_state(errors))
    return errors


def summary(rows: list[tuple[str, dict[str, list[float]]]], sep: str) -> None:
    """Every GPU's boots, own architecture left out: per compile state, the boots, the worst and mean |error|."""
    print("\nby compile state, each boot's own architecture left out")
    print(sep.join(["engine on GPU", "compile", "boots", "worst |error|", "mean |error|", "within 1%"]))
    for title, errors in rows:
        for s in (s for s in STATES if s in errors):
            e = [abs(x) for x in errors[s]]
            within = sum(x < 1.0 for x in e)
            print(sep.join([title, s, str(len(e)), f"{max(e):.2f}%", f"{sum(e) / len(e):.2f}%", f"{within}/{len(e)}"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    sep = " | " if parser.parse_args().markdown else "  "
    rows = []
    for engine in ("vllm", "sglang"):
        boots = [o for o in shipped(engine) if o.gpu is not None]
        for gpu in dict.fromkeys(o.gpu.name for o in boots if o.gpu):
            here = [o for o in boots if o.gpu and o.gpu.name == gpu]
            rows.append(
                (f"{engine} on {gpu}", table(f"{engine} on {gpu}: its own architecture left out", here, left_out, sep))
            )
            if any(o.gpu and o.gpu.name != gpu for o in boots):
                table(f"{engine} on {gpu}: from the other GPUs' boots alone", here, other_gpus, sep)
                table(f"{engine} on {gpu}: after its own, each boot left out", here, own_boot_left_out, sep)
    summary(rows, sep)


if __name__ == "__main__":
    main()
