#!/bin/bash
# Captures real outputs of the test cluster's Slurm 22.05 (scripts/slurm-cluster up) into tests/data/slurm, in
# the formats redline asks for: tests/data/slurm/capture.sh [FOLDER]. Leaves no job behind.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
export SLURM_CONF=${SLURM_CONF:-/var/lib/redline-slurm/etc/slurm.conf}
D=$(cd "${1:-$REPO/tests/data/slurm}" && pwd); cd /tmp
F=$(cd "$REPO" && PYTHONPATH=src "${PYTHON:-.venv/bin/python}" -c 'from redline.targets.slurm_parse import *; print(format_of(SINFO_FIELDS)); print(format_of(SQUEUE_FIELDS)); print(format_of(STEP_FIELDS)); print(",".join(SACCT_FIELDS))')
SI=$(sed -n 1p <<<"$F"); SQ=$(sed -n 2p <<<"$F"); ST=$(sed -n 3p <<<"$F"); SA=$(sed -n 4p <<<"$F")
C='redline:target=cluster,experiment=ladder-tiny,role=server,run=20261202T080000Z-0123abcd,unit=rung-3,exclusive=1'
sinfo -h -N -p gpu --Format="$SI" >"$D/sinfo-idle.txt"
A=$(sbatch --parsable -p gpu --gres=gpu:1 --mem=300M --nodelist=node1 -J redline-ladder-tiny-20261202T080000Z-0123abcd --comment=$C -o /dev/null --wrap 'sleep 300')
B=$(sbatch --parsable -p gpu --gres=gpu:2 --mem=300M --nodelist=node2 -J someone-else -o /dev/null --wrap 'sleep 300')
P=$(sbatch --parsable -p short -t 10 --gres=gpu:1 --mem=300M -J redline-ladder-tiny-20261202T080001Z-0123abce --comment=${C/0123abcd/0123abce} -o /dev/null --wrap 'sleep 300')
H=$(sbatch --parsable --hold -p gpu --gres=gpu:1 --mem=300M --nodelist=node1 -J held -o /dev/null --wrap true)
sleep 2
srun --jobid=$A --overlap -J redline-ladder-tiny-20261202T080002Z-0123abcf --quiet true
setsid srun --jobid=$A --overlap -J redline-ladder-tiny-20261202T080003Z-01234567 -o /dev/null sleep 100 </dev/null >/dev/null 2>&1 &
sleep 1.5
sinfo -h -N -p gpu --Format="$SI" >"$D/sinfo-busy.txt"
squeue -h --me --Format="$SQ" >"$D/squeue.txt"
squeue -h -s --jobs=$A --Format="$ST" >"$D/squeue-steps.txt"
scontrol show job -o $A >"$D/scontrol-running.txt"
scontrol show job -o $P >"$D/scontrol-pending.txt"
srun --jobid=$A --overlap --quiet bash -c 'exit 3' || true
scancel $A $B $P $H
OK=$(sbatch --parsable -p gpu --mem=100M -o /dev/null --wrap true)
BAD=$(sbatch --parsable -p gpu --mem=100M -o /dev/null --wrap 'exit 3')
SIG=$(sbatch --parsable -p gpu --mem=100M -o /dev/null --wrap 'kill -9 $$')
sleep 6
sacct -P -n --jobs=$A,$B,$P,$OK,$BAD,$SIG --format="$SA" >"$D/sacct.txt"
for j in $OK $BAD $SIG; do scontrol show job -o $j; done >"$D/scontrol-ended.txt"
echo "A=$A B=$B P=$P OK=$OK BAD=$BAD SIG=$SIG" >"$D/ids.txt"
