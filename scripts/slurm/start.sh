#!/usr/bin/env bash
# Starts redline's test cluster from nothing on this host: munged (a socket of its own), MariaDB and
# slurmdbd (when SLURM_ACCT=1), slurmctld on the bridge's address, and one slurmd per node, each in a
# network and UTS namespace of its own, with fake GPUs (real char devices) as gres. Waits until every
# node is idle, then writes $SLURM_STATE/env. Every daemon's PID goes to $SLURM_STATE/pids; stop.sh
# stops them by those alone.
set -euo pipefail
T0=$(date +%s.%N)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
S=$SLURM_STATE
mkdir -p "$S"/{etc,ctld,spool,pids,logs,dev,munge,run} "$SLURM_WORK"
chmod 1777 "$SLURM_WORK"  # jobs write their run folders here, whoever submits them
export SLURM_CONF=$S/etc/slurm.conf

# 1. The configuration, from the templates.
nodes="" gres=""
for n in $SLURM_NODES; do
  i=$(node_index "$n")
  nodes+="NodeName=$n NodeAddr=$(node_ip "$n") CPUs=$SLURM_NODE_CPUS RealMemory=$SLURM_NODE_MEMORY Gres=gpu:$SLURM_NODE_GPUS State=UNKNOWN"$'\n'
  last=$((SLURM_NODE_GPUS - 1))
  for g in $(seq 0 "$last"); do
    [ -e "$S/dev/${n}-gpu$g" ] || mknod "$S/dev/${n}-gpu$g" c 195 $((i * 16 + g))
  done
  gres+="NodeName=$n Name=gpu File=$S/dev/${n}-gpu[0-$last]"$'\n'
done
accounting=accounting_storage/none
[ "$SLURM_ACCT" = 1 ] && accounting=accounting_storage/slurmdbd
sed -e "s#@STATE@#$S#g" -e "s#@CLUSTER@#$SLURM_CLUSTER#g" -e "s#@CTLD_IP@#$SLURM_CTLD_IP#g" -e "s#@CTLD_HOST@#$(hostname -s)#g" \
  -e "s#@CTLD_PORT@#$SLURM_CTLD_PORT#g" -e "s#@D_PORT@#$SLURM_D_PORT#g" -e "s#@DBD_PORT@#$SLURM_DBD_PORT#g" \
  -e "s#@ACCOUNTING@#$accounting#g" -e "s#@PARTITION@#$SLURM_PARTITION#g" -e "s#@SHORT@#$SLURM_SHORT_PARTITION#g" \
  "$HERE/slurm.conf.in" | awk -v nodes="$nodes" '$0 == "@NODES@" {printf "%s", nodes; next} {print}' >"$S/etc/slurm.conf"
printf "AuthInfo=socket=%s\nAccountingStoragePass=%s\n" "$S/munge/munge.socket" "$S/munge/munge.socket" >>"$S/etc/slurm.conf"  # clients, daemons, slurmdbd
printf '%s' "$gres" >"$S/etc/gres.conf"
cp "$HERE/cgroup.conf" "$S/etc/cgroup.conf"

# 2. munged with a key and a socket of its own (a machine's own munged, if any, is left alone).
chown munge:munge "$S/munge" && chmod 711 "$S/munge"  # the socket needs x for all
[ -s "$S/munge/munge.key" ] || { head -c 1024 /dev/urandom >"$S/munge/munge.key"; }
chown munge:munge "$S/munge/munge.key" && chmod 400 "$S/munge/munge.key"
runuser -u munge -- /usr/sbin/munged --key-file="$S/munge/munge.key" --socket="$S/munge/munge.socket" \
  --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/munged.seed" --log-file="$S/munge/munged.log"
cp "$S/munge/munged.pid" "$S/pids/munged.pid"

# 3. Accounting: MariaDB (a database folder of its own, loopback only) and slurmdbd.
if [ "$SLURM_ACCT" = 1 ]; then
  bash "$HERE/start-accounting.sh"
fi

# 4. slurmctld on the bridge; a namespace, a veth and a slurmd per node.
ip link show "$SLURM_BRIDGE" >/dev/null 2>&1 || {
  ip link add "$SLURM_BRIDGE" type bridge
  ip addr add "$SLURM_CTLD_IP/24" dev "$SLURM_BRIDGE"
  ip link set "$SLURM_BRIDGE" up
}
/usr/sbin/slurmctld -f "$SLURM_CONF"
for n in $SLURM_NODES; do
  ns=redline-slurm-$n
  if [ ! -e "/run/netns/$ns" ]; then
    ip netns add "$ns"
    ip link add "rls-$n" type veth peer name eth0 netns "$ns"
    ip link set "rls-$n" master "$SLURM_BRIDGE" up
    ip -n "$ns" addr add "$(node_ip "$n")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  fi
  # nsenter --net, not `ip netns exec` (which remounts /sys and hides the cgroup hierarchies from slurmd)
  nsenter --net="/run/netns/$ns" unshare --uts sh -c "hostname $n; exec /usr/sbin/slurmd -f $SLURM_CONF -N $n"
done
want=$(echo "$SLURM_NODES" | wc -w)
idle() { timeout 5 sinfo -h -N -p "$SLURM_PARTITION" -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | wc -l; }
end=$(($(date +%s) + 60))
while [ "$(idle)" != "$want" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
if [ "$(idle)" != "$want" ]; then
  sinfo -N -o '%N %T %E' >&2
  echo "slurm: the nodes did not all come up idle (logs in $S/logs)" >&2
  exit 1
fi

# 5. The env file tests read (tests/slurm/conftest.py).
cat >"$S/env" <<ENV
REDLINE_SLURM_CONF=$SLURM_CONF
REDLINE_SLURM_PARTITION=$SLURM_PARTITION
REDLINE_SLURM_SHORT_PARTITION=$SLURM_SHORT_PARTITION
REDLINE_SLURM_NODES=$SLURM_NODES
REDLINE_SLURM_GPUS_PER_NODE=$SLURM_NODE_GPUS
REDLINE_SLURM_WORK=$SLURM_WORK
REDLINE_SLURM_ACCOUNTING=$SLURM_ACCT
ENV
sinfo -N -o '%N %P %T %o %G'
echo "slurm: started in $(awk -v t0="$T0" -v t1="$(date +%s.%N)" 'BEGIN {printf "%.1f", t1 - t0}') s"
