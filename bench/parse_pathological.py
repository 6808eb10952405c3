"""Parse time of the boot-log reader on pathological lines, at 1x, 10x and 100x their size.

Each line is built to make a careless regex quadratic (a long run of digits or dots
before a needle, a literal repeated across one line). Linear readers show about 10x
time for 10x input; a quadratic one shows 100x.
Run: python bench/parse_pathological.py [--base 100000]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from redline.engines import get_engine  # noqa: E402
from tests.test_untrusted_inputs import pathological  # noqa: E402


def best_of(fn, text: str, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=100_000, help="characters of the 1x line")
    args = parser.parse_args()
    engine = get_engine("vllm")
    scales = (1, 10, 100)
    print(f"{'line':26s}" + "".join(f"{f'{s}x ms':>12s}" for s in scales) + f"{'100x/1x':>10s}")
    for kind in pathological(1):
        ms = [
            best_of(lambda t: (engine.parse_boot_log(t), engine.served_model(t)), pathological(args.base * s)[kind])
            * 1e3
            for s in scales
        ]
        print(f"{kind:26s}" + "".join(f"{m:12.2f}" for m in ms) + f"{ms[2] / max(ms[0], 1e-6):10.1f}")


if __name__ == "__main__":
    main()
