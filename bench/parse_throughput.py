"""Parse throughput of the vLLM boot-log reader, in MB/s, on a large synthetic log.

The log is the real H200 fixtures repeated (with their API-server request lines,
progress bars and tracebacks) to about 64 MB, then parsed whole, several times.
Run: python bench/parse_throughput.py [--mb 64] [--repeat 3]
"""

import argparse
import time
import tracemalloc
from pathlib import Path

from redline.engines.vllm import parse_boot_log

FIXTURES = Path(__file__).parent.parent / "tests" / "data" / "vllm-0.26.0-h200"


def synthetic_log(megabytes: float) -> str:
    # every rule runs to the end: set_once values stop changing but the scan does not stop early
    logs = [p.read_text() for p in sorted(FIXTURES.glob("l8b_*.log"))] + [(FIXTURES / "q32_256k.log").read_text()]
    block = "".join(logs)
    return block * max(1, int(megabytes * 1e6 / len(block)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=64.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = synthetic_log(args.mb)
    size_mb = len(text.encode()) / 1e6
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        signals = parse_boot_log(text)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    parse_boot_log(text[: len(text) // 8])
    peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    best = min(times)
    print(f"log size        {size_mb:.1f} MB ({text.count(chr(10)):,} lines), status {signals.status.value}")
    print(f"parse time      best {best:.2f} s, worst {max(times):.2f} s over {args.repeat} runs")
    print(f"throughput      {size_mb / best:.1f} MB/s (best), {size_mb / max(times):.1f} MB/s (worst)")
    print(f"peak memory     {peak_mb:.1f} MB traced while parsing {size_mb / 8:.1f} MB")


if __name__ == "__main__":
    main()
