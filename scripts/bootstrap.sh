#!/usr/bin/env bash
# Creates redline's own virtual environment (.venv) with the package and its test
# tools, once; later runs only refresh the editable install when pyproject changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.redline-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  touch "$stamp"
fi
