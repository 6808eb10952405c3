#!/bin/bash
# On the lent H200, after `source .gpu/run-vllm.sh ready`: issue 22's landscape and search by redline's own code.
#   bash scripts/gpu-landscape-h200.sh     the 12-cell grid of scripts/gpu-plans/landscape-h200.yml, then the search
#                                          of landscape-h200-search.yml over the same space, within STOP seconds,
#                                          booting no cell with under CELL_S (150) seconds left
# Each call resumes both campaigns after their last finished cell: the run folder is kept in /tmp while the machine
# stays warm, and restored on a fresh one from .gpu/land.tgz (the last call's $OUT/land.tgz, carried) or else from the
# cells committed in tests/data (copy the new ones there, paths renamed, as its README says).
# Models come from .gpu/models (config.json and tokenizer; weights are dummy). vLLM is named as `python3 -m ...`, so
# redline finds the Python to keep the bench client resident in (the `vllm` of run-vllm.sh is a sh wrapper).
set -u
RUN=/tmp/redline-land; DEADLINE=$(( $(date +%s) + ${STOP:-540} ))
FIXTURE=tests/data/vllm-0.26.0-h200-landscape  # what earlier sessions recorded, its paths written /models, /tmp/redline
if [ ! -d $RUN ]; then
  mkdir -p $RUN
  if [ -f .gpu/land.tgz ]; then tar -C $RUN -xzf .gpu/land.tgz
  else cp -r $FIXTURE/. $RUN/ && grep -rlZ "/models/llama8b\|/tmp/redline/" $RUN | xargs -0r sed -i "s|/models/llama8b|$PWD/.gpu/models/llama8b|g; s|/tmp/redline/|$RUN/|g"
  fi
fi
export PYTHONPATH=$PWD/src:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}
for plan in landscape-h200 landscape-h200-search; do
  mkdir -p $RUN/$plan
  [ -f $RUN/$plan/campaign.yml ] || sed "s|MODELS|$PWD/.gpu/models|" scripts/gpu-plans/$plan.yml > $RUN/$plan/campaign.yml
  left=$(( DEADLINE - $(date +%s) ))
  [ $left -gt 60 ] || break
  python3 scripts/gpu-campaign.py $RUN/$plan/campaign.yml --stop-after $left --cell-seconds ${CELL_S:-150} \
    --engine-command "vllm=python3 -m vllm.entrypoints.cli.main" 2>&1 | tee -a $RUN/$plan/calls.txt
done
nvidia-smi --query-gpu=name,memory.total,uuid,driver_version --format=csv > $RUN/gpu.csv
tar -C $RUN -czf $OUT/land.tgz . && ls -la $OUT
