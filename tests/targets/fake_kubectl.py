"""A stand-in `kubectl` for the Kubernetes target's offline tests: a real child process that answers what the target
asks and writes down every command it was given (one JSON line each in $FAKE_KUBECTL_LOG), so a test can see which
pod a command went to. Every run has a running pod `run-<last 8 of its id>`; the toolbox pod is running.

    get pods -l SELECTOR -o json    the running pod of the run the selector names, else the toolbox pod
    exec POD -c C -- ARGV...        prints `in POD` (and exits 1 when the command is `cat`: no file in this pod)
    create -f -                     reads the manifest and succeeds
"""

from __future__ import annotations

import json
import os
import sys


def pod(name: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-12-01T12:00:00Z"},
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.9",
            "containerStatuses": [{"name": "engine", "restartCount": 0, "state": {"running": {}}}],
        },
    }


def main(argv: list[str]) -> int:
    args = argv[argv.index("--namespace") + 2 :] if "--namespace" in argv else argv
    with open(os.environ["FAKE_KUBECTL_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(args) + "\n")
    if args[:2] == ["get", "pods"]:
        labels = dict(kv.split("=", 1) for kv in args[args.index("-l") + 1].split(","))
        run = labels.get("redline.dev/run")
        name = f"run-{run[-8:]}" if run else "rl-tools-k8s"
        print(json.dumps({"items": [pod(name, labels)]}))
    elif args[:1] == ["exec"]:
        name, command = args[1], args[args.index("--") + 1 :]
        print(f"in {name}")
        return 1 if command[:1] == ["cat"] else 0
    elif args[:1] == ["create"]:
        sys.stdin.read()
    else:
        print("{}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
