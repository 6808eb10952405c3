#!/bin/bash
# On the lent H200, after `source .gpu/run-vllm.sh ready`: the fp8-KV A/B of scripts/gpu-plans/ab-fp8kv-h200.yml by
# redline's own code (scripts/gpu-ab.py), telemetry and the accuracy gate included. Resumable: run it again in the
# next device call and it continues after the last finished trial.
# Results in $OUT/ab-fp8kv.tgz (paths of this machine kept; rename them as tests/data/*/README.md says).
set -u
RUN=/tmp/redline-ab-fp8kv
export PYTHONPATH=$PWD/src:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}
mkdir -p $RUN
{ nvidia-smi --version; command -v dcgmi || echo "no dcgmi"; nvidia-smi --query-gpu=name,memory.total,uuid,driver_version --format=csv; } > $RUN/host.txt 2>&1
sed "s|MODELS/|/models/|" scripts/gpu-plans/ab-fp8kv-h200.yml > $RUN/spec.yml
python3 scripts/gpu-ab.py $RUN $RUN/spec.yml --models "$PWD/.gpu/models" --stop-after ${STOP:-540} \
  --engine-command "vllm=python3 -m vllm.entrypoints.cli.main" 2>&1 | tee -a $RUN/calls.txt | tail -40
tar -C $RUN -czf $OUT/ab-fp8kv.tgz .
ls -la $OUT
