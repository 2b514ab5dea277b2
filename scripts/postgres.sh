#!/usr/bin/env bash
# A throwaway PostgreSQL for the gateway's store tests (CI and local runs).
#
#   eval "$(bash scripts/postgres.sh start)"   # starts it; prints `export BATON_TEST_PG=postgres://…`
#   bash scripts/postgres.sh stop              # stops it and deletes its data
#   bash scripts/postgres.sh pause             # stops the server, keeping its data (a database outage)
#   bash scripts/postgres.sh resume            # starts it again, same port and data
#
# Uses the PostgreSQL binaries under /usr/lib/postgresql/<version>/bin (Debian package `postgresql`),
# a data folder in $BATON_PG_DIR (default /tmp/baton-pg), a free port on 127.0.0.1 and trust auth on
# loopback only. initdb refuses to run as root, so as root it runs as the `postgres` user (created by
# the Debian package; created here if missing). Everything else goes to stderr so `eval` sees only the
# export line.
set -euo pipefail
cmd=${1:-start}
dir=${BATON_PG_DIR:-/tmp/baton-pg}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "postgres.sh: no PostgreSQL binaries under /usr/lib/postgresql/*/bin; install the Debian package: apt-get install -y postgresql" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres >&2
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Starts the server of $dir on the port in $dir/port.
run_server() {
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$(cat "$dir/port") -c unix_socket_directories=$dir -c fsync=off -c max_connections=200" start >&2 \
    || { cat "$dir/server.log" >&2; exit 1; }
}

case "$cmd" in
  start)
    if [ -f "$dir/port" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      echo "export BATON_TEST_PG=postgresql://baton@127.0.0.1:$(cat "$dir/port")/baton"
      exit 0
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    echo "$port" >"$dir/port"
    as_owner "$bin/initdb" -D "$dir/data" -U baton --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    run_server
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U baton baton >&2
    echo "export BATON_TEST_PG=postgresql://baton@127.0.0.1:$port/baton"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    rm -rf "$dir"
    ;;
  pause)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2
    ;;
  resume)
    run_server
    ;;
  *)
    echo "usage: bash scripts/postgres.sh start|stop|pause|resume" >&2
    exit 2
    ;;
esac
