"""The full suite's two xdist workers (scripts/test): which tests one worker runs one after another."""

import pytest

from tests.conftest import worker_group


@pytest.mark.parametrize(
    ("nodeid", "group"),
    [
        ("tests/k8s/test_k8s_vllm.py::test_a_ladder_climbs[pod]", "real"),
        ("tests/k8s/test_k8s_target.py::test_teardown", "real"),  # a cluster's, where no vLLM boots
        ("tests/slurm/test_slurm_campaign.py::test_cells", "real"),
        ("tests/server/test_real_vllm_agent_workflow.py::test_the_whole_workflow", "real"),
        ("tests/campaign/test_real_vllm_search.py::test_a_real_grid", "real"),
        ("tests/server/test_hostile_inputs.py::test_after_the_hostile_inputs", "tests/server/test_hostile_inputs.py"),
        ("tests/server/test_tools.py::test_x[a/k8s/b]", "tests/server/test_tools.py"),  # a parameter is no folder
        ("tests/test_vllm_flags.py::test_x", "tests/test_vllm_flags.py"),
    ],
)
def test_each_test_runs_in_its_group(nodeid: str, group: str) -> None:
    assert worker_group(nodeid) == group
