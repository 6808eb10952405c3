#!/bin/bash
# On the lent H200, after `source .gpu/run-vllm.sh ready`: traffic as it is served (issue 41), by redline's own code.
#   bash scripts/gpu-traffic-h200.sh    scripts/gpu-plans/rate-h200.yml (two cells at 8, 16, 32 req/s, then each
#                                       cell's load boundary by rate), then trace-h200.yml (the chat example's first
#                                       40 s at x1, x8, x32), each bench with its GPU health rows
# One device call has 600 s: the plans share BUDGET seconds (560), and no cell is booted with under CELL_S seconds
# (240) left, so none is cut off half-way; a campaign cut short says "run again", and the same command in the next
# call (back to back, while the machine is warm and /tmp/redline-traffic kept) resumes it after its last finished
# cell. PLANS="trace-h200" runs that one alone.
# The bench client must be a vLLM with the timed_trace dataset (vllm bench serve --help lists --timed-trace-*; 0.26.0
# has it): the script says so and skips the trace plan where it is not. Results in $OUT/traffic.tgz (paths of this
# machine kept; rename them as tests/data/*/README.md says).
set -u
RUN=/tmp/redline-traffic
END=$((SECONDS + ${BUDGET:-560}))
export PYTHONPATH=$PWD/src:$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}
mkdir -p $RUN/campaigns $RUN/traces
cp src/redline/data/traces/chat-sample.jsonl $RUN/traces/
{ date -u; nvidia-smi --version; nvidia-smi --query-gpu=name,memory.total,uuid,driver_version --format=csv
  nvidia-smi --query-gpu=clocks_event_reasons.active,temperature.gpu,ecc.errors.uncorrected.volatile.total --format=csv
  dmesg 2>&1 | grep -c 'NVRM: Xid'; python3 -m vllm.entrypoints.cli.main --version; } >> $RUN/host.txt 2>&1
# --help=all: a plain --help lists the argument groups, not the timed_trace options (0.26.0 and 0.32.0 alike)
python3 -m vllm.entrypoints.cli.main bench serve --help=all 2>/dev/null | grep -q -- --timed-trace-chunk-hash-size \
  || { echo "this vLLM's bench client has no timed_trace dataset: the trace plan cannot run here" | tee -a $RUN/host.txt; NOTRACE=1; }
run() {
  left=$((END - SECONDS))
  [ $left -lt ${CELL_S:-240} ] && { echo "$1: under ${CELL_S:-240} s left in this call: run again for it"; return; }
  sed "s|MODELS|$PWD/.gpu/models|" scripts/gpu-plans/$1.yml > $RUN/campaigns/$1.yml
  python3 scripts/gpu-campaign.py $RUN/campaigns/$1.yml --stop-after $left --cell-seconds ${CELL_S:-240} \
    --engine-command "vllm=python3 -m vllm.entrypoints.cli.main" 2>&1 | grep -v "booting for" | tee -a $RUN/$1.calls.txt | tail -5
  tar -C $RUN -czf $OUT/traffic.tgz .  # after each campaign: a call cut off later keeps what ran
}
for plan in ${PLANS:-rate-h200 trace-h200}; do
  [ "$plan" = trace-h200 ] && [ -n "${NOTRACE:-}" ] && continue
  run $plan
done
ls -la $OUT
