#!/bin/bash
# On the lent H200, after `source .gpu/run-vllm.sh ready`: GPU telemetry beside each bench, by redline's own code.
#   bash scripts/gpu-telemetry-h200.sh    the two cells of scripts/gpu-plans/telemetry-h200.yml, then the one of
#                                         telemetry-h200-shared.yml with a second process holding the GPU
# Results in $OUT/telemetry.tgz (paths of this machine kept; rename them as tests/data/*/README.md says).
set -u
RUN=/tmp/redline-telemetry
export PYTHONPATH=$PWD/src:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}
mkdir -p $RUN
{ nvidia-smi --version; command -v dcgmi || echo "no dcgmi"; nvidia-smi --query-gpu=name,memory.total,uuid,driver_version --format=csv; } > $RUN/host.txt 2>&1
run() {
  mkdir -p $RUN/$1 && sed "s|MODELS|$PWD/.gpu/models|" scripts/gpu-plans/$1.yml > $RUN/$1/campaign.yml
  python3 scripts/gpu-campaign.py $RUN/$1/campaign.yml --stop-after ${2} \
    --engine-command "vllm=python3 -m vllm.entrypoints.cli.main" 2>&1 | grep -v "booting for" | tee -a $RUN/$1/calls.txt | tail -5
  tar -C $RUN -czf $OUT/telemetry.tgz .  # after each campaign: a call cut off later keeps what ran
}
run telemetry-h200 ${STOP:-240}
python3 -c 'import torch, time; x = torch.ones(1 << 20, device="cuda"); time.sleep(240)' &
SQUAT=$!
sleep 10; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits > $RUN/apps.txt 2>&1
run telemetry-h200-shared ${STOP_SHARED:-120}
kill $SQUAT
ls -la $OUT
