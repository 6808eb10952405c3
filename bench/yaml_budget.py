"""Time and peak RSS of reading a YAML file redline reads (ledger/yamlfile.py load: the capped read, check_yaml,
the round-trip parse) when the file is a flat list of millions of short items under the 16 MiB cap, and a real
ladder for scale. Each case runs in a child process of its own, so its peak RSS (ru_maxrss) is its own.

Run: python bench/yaml_budget.py [--items 7800000] [--timeout 600]
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LADDER = ROOT / "tests" / "data" / "vllm-0.26.0-h200-predict" / "llama8b" / "ladder.yml"


def cases(items: int) -> dict[str, str]:
    return {
        f"flow list of {items:,} items": "[" + "1," * (items - 1) + "1]\n",
        f"block list of {items // 2:,} items": "- 1\n" * (items // 2),
        "a real ladder (2 rungs)": LADDER.read_text(),
    }


def child(path: str) -> None:
    """Read the file as redline reads a ladder; print what it took."""
    from redline.errors import RedlineError
    from redline.ledger import yamlfile

    start = time.perf_counter()
    try:
        yamlfile.load(Path(path))
        said = "read"
    except RedlineError as exc:
        said = str(exc).replace(path, "the file")[:110]
    took = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"s": took, "peak_mib": peak_mib, "said": said}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=7_800_000, help="items of the flow list (15 MB at 7.8 million)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one case may take")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    print(f"{'file':34s}{'MB':>7s}{'s':>9s}{'peak MiB':>10s}  what it said")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in cases(args.items).items():
            path = Path(folder) / "ladder.yml"
            path.write_text(text)
            argv = [sys.executable, __file__, "--child", str(path)]
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, check=True)
                got = json.loads(done.stdout)
                row = f"{got['s']:9.2f}{got['peak_mib']:10.0f}  {got['said']}"
            except subprocess.TimeoutExpired:
                row = f"{'>' + str(int(args.timeout)):>9s}{'-':>10s}  (stopped)"
            print(f"{name:34s}{len(text) / 1e6:7.1f}{row}")


if __name__ == "__main__":
    main()
