"""The `slurm` target's pure parts, without a cluster: the batch script it renders (run by a real bash), the
readers of sinfo, squeue, sacct and scontrol on outputs captured from the test cluster's Slurm 22.05
(tests/data/slurm, made by its capture.sh), the placement, job names and comments, and the targets-file entry.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import ValidationError

from redline.errors import TargetConfigError
from redline.targets import load_targets, open_target
from redline.targets.slurm import SlurmTarget
from redline.targets.slurm_names import JobTag, hold_name, job_name, parse_comment, run_of, tag_if_ours, word
from redline.targets.slurm_parse import (
    REASON_GRACE_S,
    Ask,
    give_up_pending,
    gpu_count,
    jobs,
    megabytes,
    node_rooms,
    node_table,
    pending_message,
    place,
    sacct_end,
    scontrol_end,
    scontrol_fields,
    steps,
)
from redline.targets.slurm_script import ServerJob, probe_argv, render_hold, render_server, resources
from redline.targets.slurm_spec import SlurmSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
RUN = "20261202T080000Z-0123abcd"


def data(name: str) -> str:
    return (DATA / name).read_text()


def spec(**changes: object) -> SlurmSpec:
    return SlurmSpec.model_validate({"kind": "slurm", "partition": "gpu", **changes})


# ---- the script ----------------------------------------------------------------------------------------------


def test_the_rendered_script_runs_the_exact_argv_and_env_however_hostile_and_records_node_and_exit(
    tmp_path: Path,
) -> None:
    argv = [sys.executable, "-c", "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['V']]))"]
    argv += ["a b", "$(touch pwned)", "'q'\"", "`x`", "-- ; exit 9", "\\n"]
    value = 'it\'s "$HOME" `id` $(touch pwned2)\nline 2 \\'
    job = ServerJob(
        "rt-x-" + RUN,
        "redline:target=t,experiment=x,role=server",
        str(tmp_path),
        str(tmp_path / "boot.log"),
        argv,
        {"V": value},
    )
    script = tmp_path / "job.sbatch"
    script.write_text(render_server(spec(), job))
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "boot.log").read_text()) == [argv[3:], value]
    assert (tmp_path / "exit").read_text() == "0\n" and (tmp_path / "node").read_text().strip()
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_the_script_asks_for_the_targets_resources_and_names_the_job_and_its_folder(tmp_path: Path) -> None:
    entry = spec(
        account="llm",
        qos="high",
        gpus=2,
        gpu_type="h100",
        cpus_per_task=8,
        mem="64G",
        exclusive=True,
        time_limit="02:00:00",
        sbatch_options=["--constraint=nvlink"],
    )
    job = ServerJob(
        "rt-x-" + RUN,
        "redline:target=t,experiment=x,role=server",
        "/w/runs/" + RUN,
        "/w/runs/" + RUN + "/boot.log",
        ["vllm", "serve"],
        node="node7",
    )
    lines = [line for line in render_server(entry, job).splitlines() if line.startswith("#SBATCH ")]
    assert lines == [
        f"#SBATCH --job-name=rt-x-{RUN}",
        "#SBATCH --comment=redline:target=t,experiment=x,role=server",
        f"#SBATCH --chdir=/w/runs/{RUN}",
        f"#SBATCH --output=/w/runs/{RUN}/slurm-%j.out",
        "#SBATCH --open-mode=append",
        "#SBATCH --partition=gpu",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        "#SBATCH --nodelist=node7",
        "#SBATCH --account=llm",
        "#SBATCH --qos=high",
        "#SBATCH --gres=gpu:h100:2",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=64G",
        "#SBATCH --exclusive",
        "#SBATCH --time=02:00:00",
        "#SBATCH --constraint=nvlink",
    ]
    assert "--gpus-per-node=4" in resources(spec(gpus=4, gpu_request="gpus-per-node"), None)
    assert not [o for o in resources(spec(gpus=0), None) if o.startswith(("--gres", "--gpus"))]
    # a value with a space is quoted: sbatch's own parser of #SBATCH lines takes shell quotes
    assert "#SBATCH '--constraint=a b'" in render_server(spec(sbatch_options=["--constraint=a b"]), job)


def test_the_held_allocation_script_holds_its_node_until_idle(tmp_path: Path) -> None:
    text = render_hold(
        spec(hold_idle_s=90), hold_name("rt", "l8b"), "redline:target=t,experiment=l8b,role=hold", "/w/holds/x", "node2"
    )
    assert "#SBATCH --job-name=rt-l8b-hold" in text and "#SBATCH --nodelist=node2" in text
    assert '[ "$steps" = 0 ] && [ "$idle" -gt 90 ]' in text
    assert subprocess.run(["bash", "-n"], input=text, text=True, check=False).returncode == 0


# ---- reading what Slurm prints -------------------------------------------------------------------------------


def test_the_probe_a_step_runs_prints_a_200_s_body_and_fails_on_anything_else() -> None:
    """The GET inside an allocation (health, and the metrics read around each bench), by a real bash against a real
    HTTP server: the body after the headers on 200, exit 1 and nothing on a 404 or a closed port; with a body, a POST
    of that JSON (the accuracy gate's prompts), its length said."""

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'vllm:prefix_cache_queries_total{engine="0"} 2048.0\n'
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            sent = self.rfile.read(int(self.headers["Content-Length"]))
            body = b"echo " + self.headers["Content-Type"].encode() + b" " + sent
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        ok = subprocess.run(probe_argv("127.0.0.1", port, "/metrics"), capture_output=True, text=True, timeout=30)
        missing = subprocess.run(probe_argv("127.0.0.1", port, "/nope"), capture_output=True, text=True, timeout=30)
        post = probe_argv("127.0.0.1", port, "/v1/completions", body='{"prompt": ["a b"]}')
        posted = subprocess.run(post, capture_output=True, text=True, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    closed = subprocess.run(probe_argv("127.0.0.1", port, "/metrics"), capture_output=True, text=True, timeout=30)
    assert (ok.returncode, ok.stdout) == (0, 'vllm:prefix_cache_queries_total{engine="0"} 2048.0\n')
    assert (missing.returncode, missing.stdout) == (1, "") and (closed.returncode, closed.stdout) == (1, "")
    assert (posted.returncode, posted.stdout) == (0, 'echo application/json {"prompt": ["a b"]}')


def test_sinfo_nodes_are_read_with_their_free_gpus_idle_cpus_memory_and_address() -> None:
    idle = node_rooms(data("sinfo-idle.txt"))
    assert [(r.name, r.state, r.gpus, r.free, r.idle_cpus, r.free_mem, r.address) for r in idle] == [
        ("node1", "idle", 2, 2, 2, 8000, "10.254.0.11"),
        ("node2", "idle", 2, 2, 2, 8000, "10.254.0.12"),
    ]
    busy = {r.name: r for r in node_rooms(data("sinfo-busy.txt"))}
    assert (busy["node1"].free, busy["node2"].free, busy["node1"].idle_cpus, busy["node1"].free_mem) == (1, 0, 1, 7700)


def test_the_placement_picks_a_node_with_room_or_says_why_each_cannot() -> None:
    busy = node_rooms(data("sinfo-busy.txt"))
    one = Ask(gpus=1, cpus=1, mem=300, exclusive=False, servers_per_node=1)
    assert place(busy, one, {}, {}) == ("node1", {"node1": "", "node2": "0 GPU(s) free"})
    node, notes = place(busy, one, {"node1": 1}, {})
    assert node is None and notes["node1"] == "runs 1 server(s) of this target (servers_per_node: 1)"
    assert place(busy, one, {}, {"node1": 1})[0] is None  # a pending job of the user's pinned there takes it
    assert place(busy, one, {}, {"": 1})[0] is None  # one pinned nowhere takes the last free GPU of the partition
    node, notes = place(node_rooms(data("sinfo-idle.txt")), Ask(3, 1, 0, False, 1), {}, {})
    assert node is None and set(notes.values()) == {"2 GPU(s) free"}
    assert place(busy, Ask(0, 1, 0, True, 1), {}, {})[1]["node1"] == "not idle (exclusive asks the whole node)"
    table = node_table(busy, notes={"node2": "0 GPU(s) free"}).splitlines()
    assert table[0].split() == ["node", "state", "gpus", "used", "free", "idle", "cpus", "free", "MB", "note"]
    assert table[2].split() == ["node2", "mixed", "2", "2", "0", "1", "7700", "0", "GPU(s)", "free"]


def test_squeue_jobs_and_steps_are_read_with_their_states_reasons_nodes_and_comments() -> None:
    found = {j.job_id: j for j in jobs(data("squeue.txt"))}
    assert (found["54"].state, found["54"].nodes, found["54"].gpus) == ("RUNNING", "node1", 1)
    assert (found["56"].state, found["56"].reason, found["56"].node) == ("PENDING", "PartitionTimeLimit", "")
    assert (found["57"].reason, found["57"].node, found["57"].gpus, found["57"].comment) == (
        "JobHeldUser",
        "node1",
        1,
        "",
    )
    tag = parse_comment(found["54"].comment)
    assert tag == JobTag("cluster", "ladder-tiny", "server", run=RUN, unit="rung-3", exclusive=True)
    assert parse_comment(found["55"].comment) is None  # someone else's job: no tag
    assert [(s.job_id, s.step, s.name) for s in steps(data("squeue-steps.txt"))] == [
        ("54", "1", "redline-ladder-tiny-20261202T080003Z-01234567"),
        ("54", "batch", "batch"),
    ]


def test_sacct_says_how_jobs_and_steps_ended_and_success_is_completed_with_exit_code_0_0() -> None:
    text = data("sacct.txt")
    ends = {j: sacct_end(text, j) for j in ("54", "54.0", "54.1", "54.2", "56", "58", "59", "60")}
    summary = {j: (e.state, e.exit_code, e.returncode, e.succeeded) for j, e in ends.items() if e is not None}
    assert summary == {
        "54": ("CANCELLED", "0:0", 0, False),
        "54.0": ("COMPLETED", "0:0", 0, True),
        "54.1": ("CANCELLED", "0:15", -15, False),
        "54.2": ("FAILED", "3:0", 3, False),
        "56": ("CANCELLED", "0:0", 0, False),
        "58": ("COMPLETED", "0:0", 0, True),
        "59": ("FAILED", "3:0", 3, False),
        "60": ("FAILED", "0:9", -9, False),
    }
    assert all(e is not None and e.ended for e in ends.values())
    assert sacct_end(text, "61") is None


def test_scontrol_is_the_fallback_for_a_job_accounting_has_not_got() -> None:
    ended = [scontrol_end(line) for line in data("scontrol-ended.txt").splitlines()]
    assert [(e.job_id, e.state, e.exit_code, e.reason, e.source) for e in ended if e] == [
        ("58", "COMPLETED", "0:0", "None", "scontrol"),
        ("59", "FAILED", "3:0", "NonZeroExitCode", "scontrol"),
        ("60", "FAILED", "0:9", "JobLaunchFailure", "scontrol"),
    ]
    running = scontrol_end(data("scontrol-running.txt"))
    assert running is not None and running.state == "RUNNING" and not running.ended
    pending = scontrol_fields(data("scontrol-pending.txt"))
    assert (pending["JobState"], pending["Reason"]) == ("PENDING", "PartitionTimeLimit")
    assert pending["Comment"].startswith("redline:target=cluster,experiment=ladder-tiny,role=server,")
    assert scontrol_end("slurm_load_jobs error: Invalid job id specified") is None


@pytest.mark.parametrize(
    ("gres", "count"),
    [
        ("gpu:2", 2),
        ("gpu:0", 0),
        ("gres:gpu:1", 1),
        ("gpu:h100:8(S:0-1)", 8),
        ("gpu:(null):1(IDX:0)", 1),
        ("gpu:a100:2(IDX:0-1),gpu:h100:1(IDX:2)", 3),
        ("shard:8,gpu:1", 1),
        ("", 0),
        ("N/A", 0),
    ],
)
def test_gpu_counts_are_read_from_every_gres_spelling(gres: str, count: int) -> None:
    assert gpu_count(gres) == count


def test_memory_sizes_and_the_pending_reasons_read_as_a_person_needs() -> None:
    assert [megabytes(m) for m in ("64G", "500M", "8000", "1T", "x")] == [65536, 500, 8000, 1048576, 0]
    said = pending_message("Slurm job 56", 601, "PartitionTimeLimit")
    assert said == (
        "Slurm job 56 was still PENDING 601s after it was submitted; Slurm's reason: PartitionTimeLimit: "
        "time_limit is more than the partition allows: lower time_limit (sinfo -o '%P %l')"
    )
    assert "squeue --start" in pending_message("job", 1, "Dependency")


def test_a_job_pending_past_its_deadline_is_given_up_once_slurm_has_said_why() -> None:
    """A CI run saw "Slurm's reason: None" at a 2 s deadline: the scheduler had not looked at the job yet. Such a
    job waits for the scheduler's next pass (REASON_GRACE_S at most) so the person gets the reason."""
    judged = next(j for j in jobs(data("squeue.txt")) if j.job_id == "56")  # PartitionTimeLimit, as squeue said it
    fresh = replace(judged, reason="None")
    assert not give_up_pending(judged, 2.0, 2.0) and give_up_pending(judged, 2.1, 2.0)
    assert not give_up_pending(fresh, 2.1, 2.0) and not give_up_pending(fresh, 2.0 + REASON_GRACE_S, 2.0)
    assert give_up_pending(fresh, 2.1 + REASON_GRACE_S, 2.0)  # a reason that never comes does not wait for ever


# ---- names and comments --------------------------------------------------------------------------------------


def test_job_names_and_comments_carry_experiment_and_run_and_only_this_targets_jobs_are_its_own() -> None:
    assert job_name("rt", "ladder tiny/../x", RUN) == f"rt-ladder-tiny-..-x-{RUN}"
    assert job_name("rt", None, RUN) == f"rt-adhoc-{RUN}" and hold_name("rt", "l8b") == "rt-l8b-hold"
    assert run_of(f"rt-l8b-{RUN}") == RUN and run_of("rt-l8b-hold") is None and run_of(f"rt-l8b-{RUN}-run") is None
    assert word("a,b=c:d e") == "a-b-c-d-e" and len(word("x" * 99)) == 48
    tag = JobTag("t1", "l8b", "server", run=RUN, unit="rung 3", exclusive=True)
    assert tag.comment() == f"redline:target=t1,experiment=l8b,role=server,run={RUN},unit=rung-3,exclusive=1"
    assert parse_comment(tag.comment()) == JobTag("t1", "l8b", "server", run=RUN, unit="rung-3", exclusive=True)
    assert tag_if_ours(f"rt-l8b-{RUN}", tag.comment(), "t1", "rt") is not None
    assert tag_if_ours(f"rt-l8b-{RUN}", tag.comment(), "t2", "rt") is None  # another target's
    assert tag_if_ours(f"xx-l8b-{RUN}", tag.comment(), "t1", "rt") is None  # not redline's name
    assert parse_comment("redline:target=t1,role=admin") is None and parse_comment("(null)") is None


# ---- the targets file ----------------------------------------------------------------------------------------


def test_a_targets_file_entry_opens_a_slurm_target_and_refuses_what_would_break_tracking(tmp_path: Path) -> None:
    path = tmp_path / "targets.yml"
    login = {"kind": "ssh", "host": "login1", "user": "me", "key_file": "keys/id"}
    path.write_text(
        json.dumps({"targets": {"c": {"kind": "slurm", "partition": "gpu", "allocation": "held", "login": login}}})
    )
    target = open_target("c", load_targets(path))
    assert isinstance(target, SlurmTarget) and target.submits_jobs and target.max_servers == 1
    assert target.spec.login is not None and target.spec.login.key_file == str(tmp_path / "keys" / "id")
    assert SlurmTarget("p", spec(max_jobs=4)).max_servers == 4
    for bad, field in [
        ({"sbatch_options": ["--job-name=x"]}, "sbatch_options may not set --job-name"),
        ({"sbatch_options": ["-J x"]}, "sbatch_options"),
        ({"partition": "gpu;rm"}, "partition"),
        ({"time_limit": "1h"}, "time_limit"),
        ({"gpu_type": "h100", "gpu_request": "gpus-per-node"}, "gpu_type needs gpu_request: gres"),
        ({"workdir": "relative"}, "workdir"),
        ({"colour": "red"}, "colour"),
    ]:
        path.write_text(json.dumps({"targets": {"c": {"kind": "slurm", "partition": "gpu", **bad}}}))
        with pytest.raises(TargetConfigError, match=field):
            load_targets(path)
    with pytest.raises(ValidationError):
        spec(gpus=-1)
