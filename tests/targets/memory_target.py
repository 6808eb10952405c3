"""An in-memory Target: a test double for the tests where a real process adds nothing to what is tested.

    target = MemoryTarget()
    boot = await ServeSession(target, get_engine("vllm")).boot(config, 60)   # ready at once, a real boot log
    target.started, target.stopped, target.benches                            # what was asked of it

It "boots" by keeping a canned boot log (the real H200 vLLM log tests/data/vllm-0.26.0-h200/l8b_32k.log, up to
"Application startup complete"), answers health while the server "runs", and "benches" by writing a canned
result (the real bench file bench_l8b_c16.json, with the argv's prompts and concurrency) where the bench's
--result-dir names, in memory; its server's GET /metrics counts the bench's prompt tokens as prefix-cache lookups,
`cached` of them found. `--version` answers the version the log names; `test -e PATH` answers whether
PATH exists on this machine (a model folder a test made). No process, no port, no file written to disk.

Routing and recording (which steps run in which order, what is recorded and cleared, what a plan names) are
tested on it; what real processes do (signals, process groups, a server that dies, a bench past its deadline)
stays with the fake engine (tests/server/fake_vllm.py) on the real LocalTarget.
"""

from __future__ import annotations

import json
import posixpath
from datetime import UTC, datetime
from pathlib import Path

from redline.errors import TargetBusy, TargetPathError
from redline.targets import HostInfo, ServerHandle, Target
from redline.targets.base import GpuInfo, Launch, PosixLocator, RunResult, WaitOutcome

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200"
VERSION = "0.26.0"
READY = "Application startup complete"


def boot_log() -> str:
    """The real boot log up to the line that says the server is ready."""
    lines = (DATA / "l8b_32k.log").read_text(encoding="utf-8").splitlines()
    end = next(i for i, line in enumerate(lines) if READY in line)
    return "\n".join(line for line in lines[: end + 1] if "GET /health" not in line) + "\n"


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


class MemoryTarget(Target):
    """A target whose servers and benches live in memory (see the module's docstring)."""

    def __init__(
        self,
        name: str = "local",
        *,
        failing: frozenset[str] = frozenset(),
        same_host_as_redline: bool = False,
        cached: float = 0.0,
        other_client: int = 0,
    ) -> None:
        super().__init__(name, "/memory")
        self.same_host_as_redline = same_host_as_redline
        self.failing = failing  # result file names whose bench gets no request through
        self.cached = cached  # the share of each bench's prompt tokens its server's metrics say it found cached
        self.other_client = other_client  # prompt tokens another client sends the server just before each bench
        self.prefix = {"queries": 0.0, "hits": 0.0}  # the server's prefix-cache counters, as GET /metrics shows them
        self.files: dict[str, str] = {}
        self.alive: set[int] = set()
        self.started: list[ServerHandle] = []
        self.stopped: list[ServerHandle] = []
        self.benches: list[list[str]] = []
        self.posts: list[str] = []  # the URLs POSTed to its servers

    async def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str | None,
        log_path: str,
        exclusive: bool = False,
        run_dir: str | None = None,
    ) -> ServerHandle:
        if exclusive and self.alive:
            raise TargetBusy(f"target {self.name} still runs a server redline started")
        folder = run_dir or self.new_run_dir()
        pid = 1000 + len(self.started)
        handle = ServerHandle(
            target=self.name,
            run_dir=folder,
            log_path=posixpath.join(folder, log_path),
            started_at=datetime.now(UTC).isoformat(),
            locator=PosixLocator(pid=pid, pgid=pid),
        )
        self.files[handle.log_path] = boot_log()
        self.alive.add(pid)
        self.started.append(handle)
        return handle

    async def launched(self, launch: Launch) -> ServerHandle | None:
        return next((h for h in self.started if h.run_dir == launch.run_dir), None)

    async def wait_ready(
        self, handle: ServerHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        return WaitOutcome(status="ready" if await self.is_alive(handle) else "exited", elapsed_s=0.0)

    async def http_text(
        self, handle: ServerHandle, url: str, *, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        """vLLM's two prefix-cache counters at /metrics while the server runs."""
        if body is not None:
            self.posts.append(url)
        if not url.endswith("/metrics") or not await self.is_alive(handle):
            return None
        return "".join(f'vllm:prefix_cache_{k}_total{{engine="0"}} {v}\n' for k, v in self.prefix.items())

    async def is_alive(self, handle: ServerHandle) -> bool:
        self._check_handle(handle)
        return handle.locator.kind == "posix" and handle.locator.pid in self.alive

    async def stop(self, handle: ServerHandle, grace_s: float = 30.0) -> None:
        self._check_handle(handle)
        if handle.locator.kind == "posix":
            self.alive.discard(handle.locator.pid)
        self.stopped.append(handle)

    async def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60,
        server: ServerHandle | None = None,
    ) -> RunResult:
        if "--version" in argv:
            return RunResult(returncode=0, stdout=VERSION + "\n", stderr="")
        if argv[:2] == ["test", "-e"]:
            return RunResult(returncode=0 if Path(argv[2]).exists() else 1, stdout="", stderr="")
        if "--result-filename" in argv:
            return self._bench(argv, server)
        return RunResult(returncode=127, stdout="", stderr=f"memory target: no such command {argv[0]!r}")

    def _bench(self, argv: list[str], server: ServerHandle | None) -> RunResult:
        """A bench that writes the canned result, scaled to the argv's prompts (its rates kept, its tokens and wall time
        scaled, so its figures stay possible for what it sent; none completed where `failing`),
        and the request lines a server logs for it."""
        self.benches.append(argv)
        if server is not None:
            self.files[server.log_path] += (
                '(APIServer pid=1136) INFO:     127.0.0.1:0 - "POST /v1/completions" 200 OK\n'
            )
        name, n = _flag(argv, "--result-filename"), int(_flag(argv, "--num-prompts"))
        completed = 0 if name in self.failing else n
        result = json.loads((DATA / "bench_l8b_c16.json").read_text())
        c = int(_flag(argv, "--max-concurrency"))
        share = max(completed, 1) / result["completed"]  # the canned run's rates, over this many requests
        result.update(
            num_prompts=n, max_concurrency=c, max_concurrent_requests=c, completed=completed, failed=n - completed
        )
        result.update(
            duration=result["duration"] * share,
            total_input_tokens=round(result["total_input_tokens"] * share),
            total_output_tokens=round(result["total_output_tokens"] * share),
        )
        prompt = completed * (int(_flag(argv, "--random-input-len")) if "--random-input-len" in argv else 1)
        result.update(total_input_tokens=prompt)
        self.prefix["queries"] += prompt + self.other_client
        self.prefix["hits"] += self.cached * prompt
        self.files[posixpath.join(_flag(argv, "--result-dir"), name)] = json.dumps(result)
        return RunResult(returncode=0, stdout="", stderr="")

    async def read_text(self, path: str, max_bytes: int = 1 << 30) -> str:
        if path in self.files:
            return self.files[path]
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")  # a model's config.json a test made
        except OSError as exc:
            raise TargetPathError(f"{path} on target {self.name}: {exc.strerror}") from exc

    async def fetch(self, remote_path: str, local_path: str) -> None:
        Path(local_path).write_text(await self.read_text(remote_path))

    async def host_info(self) -> HostInfo:
        gpu = GpuInfo(name="NVIDIA H200", memory_mib=143771, uuid="GPU-memory-0")
        return HostInfo(hostname="memory", machine_id="m-memory", gpus=[gpu])

    async def close(self) -> None:
        return None
