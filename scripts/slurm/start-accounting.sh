#!/usr/bin/env bash
# MariaDB (its own data folder and socket, loopback only, port SLURM_DB_PORT) and slurmdbd, for sacct.
# The database is made once and kept across restarts; slurmdbd's password is made with it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
S=$SLURM_STATE
D=$S/db
mkdir -p "$D"
if [ ! -d "$D/data/mysql" ]; then
  chown mysql:mysql "$D"
  runuser -u mysql -- mariadb-install-db --no-defaults --datadir="$D/data" --skip-test-db --auth-root-authentication-method=socket >/dev/null
  NEW=1
fi
[ -s "$S/etc/db-password" ] || { head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$S/etc/db-password"; chmod 600 "$S/etc/db-password"; }
runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir="$D/data" --socket="$D/mysqld.sock" \
  --pid-file="$D/mysqld.pid" --bind-address=127.0.0.1 --port="$SLURM_DB_PORT" --log-error="$D/mariadb.err" \
  --innodb-buffer-pool-size=32M --skip-name-resolve </dev/null >/dev/null 2>&1 &
for _ in $(seq 150); do mariadb --socket="$D/mysqld.sock" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
cp "$D/mysqld.pid" "$S/pids/mariadb.pid"
PW=$(cat "$S/etc/db-password")
if [ "${NEW:-0}" = 1 ]; then
  mariadb --socket="$D/mysqld.sock" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$PW'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
fi
sed -e "s#@STATE@#$S#g" -e "s#@DBD_PORT@#$SLURM_DBD_PORT#g" -e "s#@DB_PORT@#$SLURM_DB_PORT#g" -e "s#@DB_PASSWORD@#$PW#g" \
  "$HERE/slurmdbd.conf.in" >"$S/etc/slurmdbd.conf"
echo "AuthInfo=socket=$S/munge/munge.socket" >>"$S/etc/slurmdbd.conf"
chmod 600 "$S/etc/slurmdbd.conf"
SLURM_CONF=$S/etc/slurm.conf /usr/sbin/slurmdbd  # reads slurmdbd.conf beside $SLURM_CONF (it has no -f)
export SLURM_CONF=$S/etc/slurm.conf
for _ in $(seq 50); do timeout 5 sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
sacctmgr -n list cluster format=cluster -P 2>/dev/null | grep -qx "$SLURM_CLUSTER" || sacctmgr -i add cluster "$SLURM_CLUSTER" >/dev/null
