#!/bin/bash
# On the lent GPU, after `source .gpu/run-vllm.sh ready`: a landscape (and any search over it) by redline's own code.
#   bash scripts/gpu-landscape.sh FIXTURE PLAN [PLAN ...]
#     FIXTURE  the tests/data folder the run is kept in (what earlier calls recorded is restored from it)
#     PLAN     scripts/gpu-plans/PLAN.yml, run in order, each within STOP seconds in all (default 540), booting no
#              cell with under CELL_S (150) seconds left
#   bash scripts/gpu-landscape.sh tests/data/vllm-0.26.0-h200-landscape landscape-h200 landscape-h200-search  (issue 22)
#   bash scripts/gpu-landscape.sh tests/data/vllm-0.26.0-landscape-8b landscape-8b                           (issue 42)
# Each call resumes every campaign after its last finished cell: the run folder is kept in /tmp while the machine
# stays warm, and restored on a fresh one from .gpu/land.tgz (the last call's $OUT/land.tgz, carried) or else from the
# cells committed in FIXTURE (bring the new ones there with scripts/gpu-land-import.sh, which renames the paths).
# Models come from .gpu/models (config.json and tokenizer; weights are dummy). vLLM is named as `python3 -m ...`, so
# redline finds the Python to keep the bench client resident in (the `vllm` of run-vllm.sh is a sh wrapper).
set -u
FIXTURE=${1:?usage: gpu-landscape.sh FIXTURE PLAN [PLAN ...]}; shift
RUN=/tmp/redline-land; DEADLINE=$(( $(date +%s) + ${STOP:-540} ))
# The fixture's paths are written /models/<model> and /tmp/redline/ (the device's own renamed back on restore).
if [ ! -d $RUN ]; then
  mkdir -p $RUN
  if [ -f .gpu/land.tgz ]; then tar -C $RUN -xzf .gpu/land.tgz
  elif [ -d "$FIXTURE" ]; then
    cp -r "$FIXTURE"/. $RUN/ && grep -rlZ "/models/\|/tmp/redline/" $RUN | xargs -0r sed -i "s|/models/|$PWD/.gpu/models/|g; s|/tmp/redline/|$RUN/|g"
  fi
fi
export PYTHONPATH=$PWD/src:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}
for plan in "$@"; do
  mkdir -p $RUN/$plan
  [ -f $RUN/$plan/campaign.yml ] || sed "s|MODELS|$PWD/.gpu/models|" scripts/gpu-plans/$plan.yml > $RUN/$plan/campaign.yml
  left=$(( DEADLINE - $(date +%s) ))
  [ $left -gt 60 ] || break
  python3 scripts/gpu-campaign.py $RUN/$plan/campaign.yml --stop-after $left --cell-seconds ${CELL_S:-150} \
    --engine-command "vllm=python3 -m vllm.entrypoints.cli.main" 2>&1 | tee -a $RUN/$plan/calls.txt
done
nvidia-smi --query-gpu=name,memory.total,uuid,driver_version --format=csv > $RUN/gpu.csv
tar -C $RUN -czf $OUT/land.tgz . && ls -la $OUT
