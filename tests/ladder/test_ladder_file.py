"""ladder.yml on disk: round-trip, schema, append-only, atomic under kill -9, one writer at a time."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from redline.errors import LadderError
from redline.ledger import append_rung, create_ladder, read_ladder, set_smoke_test, update_ladder
from redline.ledger.ladder_file import Change, check_append_only, set_ceiling
from redline.models.ladder import Ceiling, SmokeTest
from tests.ladder.helpers import boot, ladder, q32_boot, smoke

SRC = Path(__file__).resolve().parents[2] / "src"


def _new(tmp_path: Path, **fields) -> Path:
    path = tmp_path / "ladder.yml"
    create_ladder(path, ladder(**fields))
    return path


def _append_boot(log_text: str):
    def change(state):
        updated = boot(state, log_text)
        return Change(updated, updated.rungs[-1])

    return change


def test_a_new_ladder_reads_back_equal(tmp_path):
    path = _new(tmp_path, min_concurrency=2, policy="doubling")
    assert read_ladder(path) == ladder(min_concurrency=2, policy="doubling")


def test_comments_and_key_order_survive_an_append(tmp_path):
    path = _new(tmp_path)
    text = path.read_text()
    text = text.replace("policy: signal", "policy: signal  # chosen after the 11-30 run")
    text = text.replace("floor:\n", "# the boot we know works\nfloor:\n")
    path.write_text(text)
    update_ladder(path, _append_boot(q32_boot(32768)))
    after = path.read_text()
    assert "policy: signal  # chosen after the 11-30 run" in after
    assert "# the boot we know works\nfloor:" in after
    assert after.index("model:") < after.index("policy:") < after.index("floor:") < after.index("rungs:")
    assert read_ladder(path).rungs[0].serve.max_model_len == 32768


def test_a_rung_is_written_with_simulated_false_and_its_full_serve_config(tmp_path):
    path = _new(tmp_path)
    update_ladder(path, _append_boot(q32_boot(32768)))
    text = path.read_text()
    assert "simulated: false" in text and "gpu_memory_utilization: 0.9" in text and "kv_cache_tokens: 256848" in text


def test_missing_file_is_a_one_line_ladder_error(tmp_path):
    with pytest.raises(LadderError, match="no such file.*ladder init"):
        read_ladder(tmp_path / "nope.yml")


def test_a_ladder_that_fails_its_schema_is_refused_with_where(tmp_path):
    path = _new(tmp_path)
    path.write_text(path.read_text().replace("min_concurrency: 1", "min_concurrency: 0"))
    with pytest.raises(LadderError, match=r"does not follow the ladder schema: min_concurrency:"):
        read_ladder(path)


def test_broken_yaml_is_refused_with_its_line(tmp_path):
    path = tmp_path / "ladder.yml"
    path.write_text("model: {key: [\n")
    with pytest.raises(LadderError, match="not valid YAML at line"):
        read_ladder(path)


def test_rungs_out_of_order_in_the_file_are_refused(tmp_path):
    path = _new(tmp_path)
    update_ladder(path, _append_boot(q32_boot(32768)))
    path.write_text(path.read_text().replace("  - index: 1\n", "  - index: 2\n"))
    with pytest.raises(LadderError, match="rungs.*position 1"):
        read_ladder(path)


def test_create_refuses_an_existing_file_and_leaves_it_alone(tmp_path):
    path = _new(tmp_path)
    before = path.read_bytes()
    with pytest.raises(LadderError, match="already there"):
        create_ladder(path, ladder(policy="doubling"))
    assert path.read_bytes() == before


def test_a_refused_change_touches_nothing_on_disk(tmp_path):
    path = _new(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()

    def refuse(state):
        raise LadderError("no")

    with pytest.raises(LadderError):
        update_ladder(path, refuse)
    assert (sorted(p.name for p in tmp_path.iterdir()), path.read_bytes()) == before  # not even a lock file


def test_history_cannot_be_rewritten():
    state = smoke(boot(ladder(), q32_boot(32768)))
    rewritten = state.model_copy(update={"rungs": [state.rungs[0].model_copy(update={"reason": "edited"})]})
    with pytest.raises(LadderError, match="rewrite rung 1"):
        check_append_only(state, rewritten)
    with pytest.raises(LadderError, match="remove rungs"):
        check_append_only(state, state.model_copy(update={"rungs": []}))
    with pytest.raises(LadderError, match="policy"):
        check_append_only(state, state.model_copy(update={"policy": "doubling"}))


def test_only_the_last_rungs_smoke_test_is_filled_and_only_once():
    state = boot(ladder(), q32_boot(32768))
    tested = set_smoke_test(state, SmokeTest(attempted=True, outcome="pass"))
    check_append_only(state, tested)  # allowed
    with pytest.raises(LadderError, match="already has its smoke test"):
        set_smoke_test(tested, SmokeTest(attempted=True, outcome="fail"))


def test_the_ceiling_is_set_once():
    state = smoke(boot(ladder(), q32_boot(32768)))
    ceiling = Ceiling(
        max_model_len=32768,
        max_num_batched_tokens=8192,
        proven_by=[1],
        serve_command="vllm serve",
        reason="test",
        recorded_at="2026-11-30T10:00:00Z",
    )
    done = set_ceiling(state, ceiling)
    with pytest.raises(LadderError, match="already recorded"):
        set_ceiling(done, ceiling)


def test_append_refuses_a_rung_out_of_order():
    state = boot(ladder(), q32_boot(32768))
    with pytest.raises(LadderError, match="out of order"):
        append_rung(state, state.rungs[0])


# -- crashes and concurrent writers, with real child processes ------------------------------------------

WRITER = textwrap.dedent("""
    import os, sys, time
    sys.path[:0] = [{src!r}, {root!r}]
    from pathlib import Path
    if os.environ.get("SLOW_DISK"):  # a slow fsync that says when it starts: the kill lands mid-write
        real_fsync = os.fsync
        def slow_fsync(fd):
            Path(os.environ["SLOW_DISK"]).touch()
            time.sleep(0.2)
            real_fsync(fd)
        os.fsync = slow_fsync
    from redline.ledger import update_ladder
    from redline.ledger.ladder_file import Change
    from redline.models.ladder import Rung
    path, count = Path(sys.argv[1]), int(sys.argv[2])

    def change(state):
        # copy the first rung under the next index, its reason of varying length: the file grows unevenly
        first = state.rungs[0]
        reason = "x" * (len(state.rungs) * 97 % 5000)
        rung = Rung.model_validate({{**first.model_dump(), "index": len(state.rungs) + 1, "reason": reason}})
        return Change(state.model_copy(update={{"rungs": [*state.rungs, rung]}}), None)

    for i in range(count):
        update_ladder(path, change)
        print(i, flush=True)
""")


def _writer(tmp_path: Path) -> Path:
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(src=str(SRC), root=str(SRC.parent)))
    return script


def _kill_writer(script: Path, path: Path, wait, env: dict[str, str] | None = None) -> None:
    child = subprocess.Popen(
        [sys.executable, str(script), str(path), "100000"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        wait(child)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def _check_intact(path: Path, before: int) -> int:
    state = read_ladder(path)  # parses and validates, whatever the moment of the kill
    assert [r.index for r in state.rungs] == list(range(1, len(state.rungs) + 1))
    return len(state.rungs) - before


def test_kill_9_at_random_moments_never_leaves_a_broken_ladder(tmp_path):
    path = _new(tmp_path)
    update_ladder(path, _append_boot(q32_boot(32768)))
    script, rng, writes = _writer(tmp_path), random.Random(7), 0
    for _ in range(6):
        before = len(read_ladder(path).rungs)
        _kill_writer(script, path, lambda child: (child.stdout.readline(), time.sleep(rng.uniform(0.0, 0.25))))
        writes += _check_intact(path, before)
    assert writes >= 6
    update_ladder(path, lambda s: Change(s, None))  # the dead writer's lock does not block the next one
    assert not list(tmp_path.glob(".ladder.yml.*.tmp"))  # and its temp files are cleared


def test_kill_9_in_the_middle_of_a_write_leaves_the_old_file(tmp_path):
    path = _new(tmp_path)
    update_ladder(path, _append_boot(q32_boot(32768)))
    script, mark = _writer(tmp_path), tmp_path / "in-fsync"

    def in_fsync(child):
        while not mark.exists():
            time.sleep(0.005)

    for _ in range(3):
        before, old = len(read_ladder(path).rungs), path.read_bytes()
        mark.unlink(missing_ok=True)
        _kill_writer(script, path, in_fsync, env={"SLOW_DISK": str(mark)})
        assert list(tmp_path.glob(".ladder.yml.*.tmp"))  # the kill did land mid-write
        assert path.read_bytes() == old and _check_intact(path, before) == 0


def test_concurrent_writers_are_serialized(tmp_path):
    path = _new(tmp_path)
    update_ladder(path, _append_boot(q32_boot(32768)))
    script = _writer(tmp_path)
    children = [
        subprocess.Popen([sys.executable, str(script), str(path), "8"], stdout=subprocess.DEVNULL) for _ in range(3)
    ]
    assert [c.wait(timeout=120) for c in children] == [0, 0, 0]
    assert len(read_ladder(path).rungs) == 1 + 3 * 8  # no write lost to a race


def test_an_unknown_gpu_profile_is_filled_once_from_the_host(tmp_path):
    from types import SimpleNamespace as Host

    from redline.ledger import set_host

    path = _new(tmp_path)
    assert read_ladder(path).gpu is None
    h200 = Host(hostname="gpu1", gpus=[Host(name="NVIDIA H200", memory_mib=143_771)])
    gpu = set_host(path, h200).gpu
    assert (gpu.name, gpu.memory_gib, gpu.count) == ("NVIDIA H200", 140.4, 1)
    other = Host(hostname="gpu2", gpus=[Host(name="NVIDIA A100", memory_mib=81_920)] * 2)
    assert set_host(path, other).gpu == gpu  # a known profile is never rewritten
    with pytest.raises(LadderError, match="rewrite the ladder's gpu"):
        check_append_only(read_ladder(path), read_ladder(path).model_copy(update={"gpu": None}))
