#!/bin/bash
# On the lent H200, after `source .gpu/run-vllm.sh ready`: the memory model's proofs by redline's own code.
#   bash scripts/gpu-predict-h200.sh climbs      two ladders at min_concurrency 16 with the predict policy (llama8b,
#                                                in the calibration; qwen3-14b, in none), then a campaign dry run
#                                                that marks a cell predicted infeasible
#   bash scripts/gpu-predict-h200.sh calibrate   the calibration boots of scripts/gpu-plans/calibrate-h200.yml
# Models are assembled in .gpu/models from src/redline/data/boots/models (config.json) and the H200 fixtures'
# tokenizer (.gpu/tokenizer). Results go to $OUT as a tarball.
set -u
MODELS=$PWD/.gpu/models
for m in llama8b qwen32b qwen3-8b qwen3-14b qwen3-30b-a3b; do
  mkdir -p $MODELS/$m && cp src/redline/data/boots/models/$m/config.json .gpu/tokenizer/* $MODELS/$m/
done
export PYTHONPATH=$PWD/src:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}
RUN=/tmp/redline-h200; mkdir -p $RUN
case "$1" in
climbs)
  python3 scripts/gpu-climb.py $RUN/ladders $MODELS ${KEYS:-llama8b qwen3-14b} --floor 8192 2048 \
    --fixed '{"enforce_eager": true}' --min-concurrency 16 --stop-after ${STOP:-500} 2>&1 | tee $RUN/climbs.txt
  mkdir -p $RUN/campaigns && sed "s|MODELS|$MODELS|" scripts/gpu-plans/infeasible-campaign.yml > $RUN/campaigns/q32.yml
  [ -n "${NO_PLAN:-}" ] || python3 scripts/gpu-campaign.py $RUN/campaigns/q32.yml --dry-run 2>&1 | tee $RUN/campaign-dry-run.txt ;;
calibrate)
  python3 scripts/gpu-calibrate.py $RUN/calibration $MODELS ${PLAN:-scripts/gpu-plans/calibrate-h200.yml} \
    --stop-after ${STOP:-540} 2>&1 | tee $RUN/calibrate.txt ;;
esac
nvidia-smi --query-gpu=name,memory.total,uuid,driver_version --format=csv > $RUN/gpu.csv
tar -C $RUN -czf $OUT/$1.tgz . && ls -la $OUT
