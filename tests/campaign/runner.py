"""A campaign runner in a process of its own, for the tests that kill it: the real LocalTarget, the fake engine.

python -m tests.campaign.runner CAMPAIGN WORKDIR ENGINE_ENV_JSON [at-once]

`at-once`: a target that runs two servers at once (tests/campaign/servers_at_once.py).
"""

import json
import sys

import anyio

from redline.ops.campaign.run import campaign_run
from redline.targets import LocalTarget
from tests.campaign.servers_at_once import ServersAtOnce
from tests.server.helpers import FAKE_VLLM


async def main(path: str, workdir: str, engine_env: str, kind: str = "") -> None:
    made = ServersAtOnce if kind == "at-once" else LocalTarget
    target = made(
        "local", workdir=workdir, engine_command=[sys.executable, str(FAKE_VLLM)], engine_env=json.loads(engine_env)
    )
    async with target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    print(result.model_dump_json())


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
