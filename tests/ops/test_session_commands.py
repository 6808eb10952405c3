"""A session runs each engine by the command its target names, and benches it with its bench client's command."""

from redline.engines import get_engine
from redline.ops.session import ServeSession
from redline.targets import LocalTarget


def test_sglang_boots_by_its_own_command_and_is_benched_by_the_vllm_client_the_target_names() -> None:
    target = LocalTarget(
        "gpu",
        engine_commands={
            "vllm": ["/opt/vllm/bin/vllm"],
            "sglang": ["/opt/sgl/bin/python3", "-m", "sglang.launch_server"],
        },
    )
    session = ServeSession(target, get_engine("sglang"))
    assert session.executable == ["/opt/sgl/bin/python3", "-m", "sglang.launch_server"]
    assert session.bench_executable == ["/opt/vllm/bin/vllm"]


def test_vllm_is_its_own_bench_client() -> None:
    target = LocalTarget("gpu", engine_commands={"vllm": ["/opt/vllm/bin/vllm"]})
    session = ServeSession(target, get_engine("vllm"))
    assert session.executable == session.bench_executable == ["/opt/vllm/bin/vllm"]
