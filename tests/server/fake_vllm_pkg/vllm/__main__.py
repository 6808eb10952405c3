"""`python -m vllm serve ...` and `python -m vllm bench serve ...`: the fake engine's command line."""

import sys

from fake_vllm import main

sys.exit(main(sys.argv[1:]))
