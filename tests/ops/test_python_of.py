"""Which Python an engine command runs under, so the bench client can stay resident in it: `python -m`, a Python
script's #! line, or a shell wrapper that is one `exec PYTHON -m MODULE "$@"` (as the H200 recipe's `vllm` is);
a wrapper that does more keeps its own client. Read through the real LocalTarget from files on disk."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from redline.ops.resident import python_of, python_of_script
from redline.targets import LocalTarget

pytestmark = pytest.mark.anyio
RECIPE = '#!/bin/sh\nexec python3 -m vllm.entrypoints.cli.main "$@"\n'  # what run-vllm.sh writes as `vllm`


@pytest.mark.parametrize(
    ("text", "python"),
    [
        (RECIPE, ["python3"]),
        (f"#!{sys.executable}\nimport vllm\n", [sys.executable]),
        (
            '#!/usr/bin/env bash\n# the engine\nexec /opt/py/bin/python3.12 -m sglang.launch_server "$@"\n',
            ["/opt/py/bin/python3.12"],
        ),
        ('#!/bin/sh\nexport PYTHONPATH=/x\nexec python3 -m vllm.entrypoints.cli.main "$@"\n', None),
        ('#!/bin/sh\nexec vllm-real "$@"\n', None),
        ("#!/bin/sh\nexec python3 -m vllm.entrypoints.cli.main serve\n", None),
        ("ELF binary", None),
    ],
    ids=["recipe", "python-shebang", "env-bash", "sets-env", "not-python", "no-args", "binary"],
)
def test_which_python_a_script_runs_under(text: str, python: list[str] | None) -> None:
    assert python_of_script(text) == python


async def test_the_recipe_s_wrapper_on_disk_names_its_python(tmp_path: Path) -> None:
    wrapper = tmp_path / "vllm"
    wrapper.write_text(RECIPE)
    wrapper.chmod(0o755)
    async with LocalTarget("local", workdir=str(tmp_path / "target")) as target:
        assert await python_of(target, [str(wrapper)]) == ["python3"]
        assert await python_of(target, [sys.executable, "-m", "vllm"]) == [sys.executable]
        assert await python_of(target, [str(tmp_path / "absent")]) is None
