"""Shared test helpers: where the real captured data lives."""

import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
H200 = DATA / "vllm-0.26.0-h200"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def h200_log(name: str) -> str:
    return (H200 / name).read_text()


def pid_running(pid: int) -> bool:
    """A live process (a zombie is dead: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in "ZXx"


def processes_naming(path: Path) -> list[str]:
    """Command lines of live processes (not zombies) that name `path`: what a test must not leave behind."""
    needle, found = str(path).encode(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # gone while we looked
        if state not in "ZXx" and needle in cmdline:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


# The two lanes. `slow` marks a test that starts real processes (a vLLM, sshd, the cluster, the MCP
# Inspector, an MCP server or the CLI as a child, a fake engine's boots and benches) or waits seconds on
# purpose; `scripts/test --fast` (pytest -m "not slow") runs every other test. A new test is in the fast lane
# unless it is marked here (or with @pytest.mark.slow); the fast lane's summary names any test over
# FAST_LANE_LIMIT_S, to be marked. Entries are paths under tests/ (a whole file) or test function names. A test of
# routing or recording that a real process adds nothing to runs on the in-memory target instead
# (tests/targets/memory_target.py) and stays in the fast lane.
REAL_MARKERS = ("vllm", "sshd", "k8s", "slurm", "inspector")
SLOW_FILES = (
    "test_cli_climb.py",  # the redline CLI as a child, climbing the fake engine
    "test_cli_parse_log.py",  # the redline CLI as a child
    "campaign/test_cli.py",
    "campaign/test_parallel.py",  # cells at once, each a fake engine boot; benches that wait on purpose
    "campaign/test_real_vllm_workloads.py",  # two real vLLM CPU boots, each benched on two workloads
    "campaign/test_run.py",  # every cell a fake engine boot; killed runners and their resumes
    "campaign/test_search_run.py",  # searches of fake engine boots, a killed one and its resume
    "campaign/test_search_seen.py",  # a search of fake engine boots, read over MCP before and after
    "campaign/test_real_vllm_search.py",  # a real grid and a real search on the vLLM CPU build (5 boots)
    "campaign/test_gpu_telemetry.py",  # fake engine boots sampled by a stand-in nvidia-smi
    "test_gpu_scripts.py",  # the GPU scripts on the fake engine: 5 runs of gpu-campaign.py (about 20 s)
    "test_walk.py",  # bench/call_trace.py's four traced calls, each a fake engine boot (about 15 s)
    "campaign/test_boundary_run.py",  # fake engine boots probed past their knee
    "ops/test_resident_client.py",  # fake engine boots and their resident clients
    "rigor/test_ab_run.py",  # every trial a fake engine boot
    "rigor/test_sources.py",
    "ops/test_rung_accounting.py",  # a bench past its deadline
    "ops/test_deep_workdir.py",  # fake engine boots, one failing on its socket's path
    "server/test_climb.py",  # MCP climbs to the end, a killed server and its restart
    "server/test_default_config.py",  # `redline serve` as a child
    "server/test_hardening_jobs.py",  # job ownership across processes and PID namespaces
    "server/test_hardening_knobs.py",  # MCP over stdio, boots, a 64 MB parse in a worker process
    "server/test_hardening_paths.py",  # `redline serve` as a child, boots
    "server/test_hardening_figures.py",  # a report and baselines per planted file; MCP over stdio
    "server/test_hardening_registry.py",  # campaign and A/B dry runs on the fake engine; MCP over stdio
    "server/test_hardening_json_levers.py",  # MCP over stdio
    "server/test_hardening_round4.py",  # MCP over stdio and the CLI as a child, on 15 MB and 48 MiB files
    "server/test_hostile_inputs.py",  # one harness that boots: the whole file or none of it
    "server/test_job_tools.py",
    "server/test_latency_bench.py",
    "server/test_strict_arguments.py",  # `redline mcp` and the CLI as children
    "server/test_transports.py",  # `redline serve` over stdio and HTTP
    "server/test_real_vllm_slow_load.py",  # two real vLLM CPU boots, one reading its weights through a throttled mount
)
SLOW_TESTS = frozenset(
    {
        # boots of the fake engine, benches, deadlines and waits
        "test_a_waiting_boot_advances_against_the_last_boot_s_time",
        "test_a_campaign_across_engines_runs_each_cell_on_its_engine_and_crowns_sglang",
        "test_a_three_trial_ab_across_engines_is_a_verdict_that_says_sglang_won",
        "test_champion_select_ends_with_the_next_levers_and_says_what_the_close_lacks",
        "test_a_second_run_of_a_running_campaign_is_refused",
        "test_job_cancel_of_a_running_campaign_leaves_no_server",
        "test_the_campaign_file_is_parsed_once_per_call_and_once_more_when_its_job_starts",
        "test_a_boot_past_its_deadline_is_timeout_boot_and_leaves_nothing_running",
        "test_a_good_rung_boots_and_its_server_is_seen_until_stopped",
        "test_stop_server_on_another_target_is_refused_and_the_server_kept",
        "test_code_execution_through_knobs_a_widened_flag_is_refused_at_init_and_recorded_when_widened",
        "test_every_tool_in_process",
        "test_progress_reaches_the_caller_while_it_waits",
        "test_server_shutdown_stops_the_servers_of_running_jobs",
        "test_ladders_are_readable_as_resources",
        "test_a_local_build_suffix_is_the_same_release_and_a_miss_names_its_field",  # an MCP server's engine probes
        "test_dry_runs_say_their_progress_and_ask_the_engine_version_once_per_server_session",
        # `redline serve --http` as a child on every loopback address
        "test_http_on_any_loopback_address_a_non_loopback_bind_still_needs_a_token",
        "test_http_on_any_loopback_address_refuses_a_foreign_host_or_origin",
        # writers in child processes, killed at random moments
        "test_concurrent_writers_are_serialized",
        "test_kill_9_at_random_moments_never_leaves_a_broken_ladder",
        "test_kill_9_in_the_middle_of_a_write_leaves_the_old_file",
        # the stand-in nvidia-smi and dcgmi sampling beside a sleeping process (about 2 s each)
        "test_hostile_telemetry_a_row_no_tool_writes_is_no_telemetry_and_the_bench_goes_on",
        # `redline mcp --http` as a child under a flood from another process; 1,100 connections sending a byte each
        "test_http_bounds_a_flood_of_idle_connections_from_another_process_drops_none_of_the_owner_s_calls",
        "test_http_bounds_a_flood_that_sends_a_byte_on_each_connection_still_cannot_hold_every_descriptor",
        # five 15 MB files, each refused by its reader (about 2 s each on a busy 2-core host)
        "test_every_reader_takes_the_flat_list_past_the_budget_in_well_under_a_second",
        # a stop that waits out a GPU's release on purpose
        "test_stop_waits_until_the_gpu_lets_go",
        "test_stop_raises_when_the_gpu_stays_held",
    }
)
FAST_LANE_LIMIT_S = 3.0
TESTS = Path(__file__).parent


def is_slow(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(name) for name in REAL_MARKERS):
        return True
    rel = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else item.path.name
    name = getattr(item, "originalname", item.name)
    return name in SLOW_TESTS or any(rel == f or rel.endswith("/" + f) for f in SLOW_FILES)


CLUSTERS = ("k8s", "slurm")  # tests/<cluster>/: every test there needs that cluster
REAL_VLLM_FILES = "test_real_vllm_"  # every test elsewhere that boots the real vLLM lives in a file named so


def worker_group(nodeid: str) -> str:
    """Which tests one xdist worker runs one after another (scripts/test runs the full suite on two): every test of
    the clusters and every real vLLM boot, as "real" (a cluster's tests share it, one exclusive server at a time is
    part of what they test, and two vLLM boots at once on two cores took three times as long each), and otherwise
    a file's (its module fixtures). From the node id alone: the scheduler sees nothing else."""
    path = nodeid.split("::", 1)[0]
    folders, name = path.split("/")[:-1], path.rpartition("/")[2]
    return "real" if any(c in folders for c in CLUSTERS) or name.startswith(REAL_VLLM_FILES) else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return ByGroup(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("vllm") and worker_group(item.nodeid) != "real":
            raise pytest.UsageError(f"{item.nodeid} boots the real vLLM: put it in a file named {REAL_VLLM_FILES}*")
    # the long groups first (a stable sort: each file's order kept), so neither worker starts one last
    items.sort(key=lambda item: worker_group(item.nodeid) != "real")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """In the fast lane, name the tests that took long enough to belong in the slow one."""
    if "not slow" not in (config.option.markexpr or ""):
        return
    took: dict[str, float] = {}
    for report in (r for key in ("", "passed", "failed") for r in terminalreporter.stats.get(key, [])):
        took[report.nodeid] = took.get(report.nodeid, 0.0) + report.duration
    over = sorted((s, nodeid) for nodeid, s in took.items() if s > FAST_LANE_LIMIT_S)
    if over:
        terminalreporter.write_line(f"fast lane: over {FAST_LANE_LIMIT_S:.0f} s (mark slow in tests/conftest.py):")
        for seconds, nodeid in reversed(over):
            terminalreporter.write_line(f"  {seconds:5.1f} s  {nodeid}")
