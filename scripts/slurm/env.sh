# Shared settings for scripts/slurm-cluster and scripts/slurm/*.sh (sourced, not run).
# Debian bookworm's Slurm 22.05 (slurmctld, slurmd, the clients) with munge, no systemd; accounting
# (sacct) through slurmdbd and MariaDB. Everything lives under SLURM_STATE; override with REDLINE_SLURM_*.
SLURM_STATE=${REDLINE_SLURM_STATE:-/var/lib/redline-slurm}
SLURM_CLUSTER=redline
SLURM_PACKAGES="slurmctld slurmd slurm-client munge iproute2 util-linux"
# sacct reads slurmdbd, which stores in MariaDB. REDLINE_SLURM_ACCT=0: no accounting (sacct then says
# "accounting storage is disabled" and redline reads job ends from scontrol and the job's own exit file).
SLURM_ACCT=${REDLINE_SLURM_ACCT:-1}
SLURM_ACCT_PACKAGES="slurmdbd mariadb-server"
# Ports away from Slurm's defaults (6817-6819) and MariaDB's (3306), so a developer's own are left alone.
SLURM_CTLD_PORT=${REDLINE_SLURM_CTLD_PORT:-16817}
SLURM_D_PORT=6818  # each slurmd has a network namespace of its own: they can share it
SLURM_DBD_PORT=${REDLINE_SLURM_DBD_PORT:-16819}
SLURM_DB_PORT=${REDLINE_SLURM_DB_PORT:-13306}
# Each node is a slurmd in a network and UTS namespace of its own (its own IP and hostname), on a
# bridge with the controller's address: two servers on two nodes can both listen on port 8000, and
# this host (the login side) reaches each at its node's address.
SLURM_BRIDGE=redline-slurm0
SLURM_NET=10.254.0
SLURM_CTLD_IP=$SLURM_NET.1
SLURM_NODES="node1 node2"
SLURM_NODE_CPUS=2        # the host's cores are shared: each node offers two
SLURM_NODE_MEMORY=8000   # MB
SLURM_NODE_GPUS=2        # fake GPUs: char devices with NVIDIA's major (195), no driver behind them
# The partitions: gpu (the default, no time limit) and short (one minute at most: a job asking more
# stays PENDING with Reason=PartitionTimeLimit, what tests of the pending deadline need).
SLURM_PARTITION=gpu
SLURM_SHORT_PARTITION=short
# Work folder every node and the login side share (one host: a local folder).
SLURM_WORK=$SLURM_STATE/work
node_index() { echo "${1#node}"; }
node_ip() { echo "$SLURM_NET.1$(node_index "$1")"; }
