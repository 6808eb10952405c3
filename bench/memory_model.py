"""Predicted against observed for every boot log redline ships, each with its own architecture left out of the
calibration: the KV tokens and every term, and the worst error per term. Figures, not a test
(tests/engines/test_memory_model.py holds the 1% line).

    python bench/memory_model.py [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from redline.engines import get_engine  # noqa: E402
from redline.models.memory import MemoryPrediction, Observation  # noqa: E402
from redline.ops.predict.corpus import shipped  # noqa: E402

TERMS = (
    ("weights", "weights_gib", "weights_gib"),
    ("activation", "activation_gib", "peak_activation_gib"),
    ("non-torch", "non_torch_gib", "non_torch_gib"),
    ("cuda graphs", "cuda_graph_gib", "cudagraph_gib"),
)


def left_out(o: Observation) -> MemoryPrediction:
    model = get_engine(o.engine).memory_model()
    cal = model.calibrate([x for x in shipped(o.engine) if x.shape != o.shape])
    return model.predict(o.shape, o.serve, o.gpu, cal, model=o.architecture, architecture=o.architecture, version=None)


def rows() -> list[tuple[Observation, MemoryPrediction]]:
    return [(o, left_out(o)) for engine in ("vllm", "sglang") for o in shipped(engine) if o.gpu is not None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    sep = " | " if args.markdown else "  "
    head = ["boot", "predicted KV tokens", "observed", "error", "inside band", *(t[0] for t in TERMS)]
    print(sep.join(head))
    worst: dict[str, float] = {"kv tokens %": 0.0, **{t[0] + " GiB": 0.0 for t in TERMS}}
    for o, p in rows():
        real = o.signals.kv_cache_tokens or 0
        err = 100 * (p.kv_cache_tokens - real) / real
        worst["kv tokens %"] = max(worst["kv tokens %"], abs(err))
        cells = []
        for name, predicted, observed in TERMS:
            a, b = getattr(p.terms, predicted), getattr(o.signals.memory, observed)
            if a is None or b is None:
                cells.append("-")
                continue
            worst[name + " GiB"] = max(worst[name + " GiB"], abs(a - b))
            cells.append(f"{a:.2f} vs {b:.2f}")
        inside = p.kv_cache_tokens_low <= real <= p.kv_cache_tokens_high
        print(sep.join([o.source, f"{p.kv_cache_tokens:,}", f"{real:,}", f"{err:+.2f}%", str(inside), *cells]))
    print("worst: " + ", ".join(f"{k} {v:.2f}" for k, v in worst.items()))


if __name__ == "__main__":
    main()
