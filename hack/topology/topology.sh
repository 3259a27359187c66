#!/usr/bin/env bash
# Gantry's production topology as plain processes on loopback, the shape of docker-compose.yml:
# PostgreSQL (Debian's, installed if missing), `gantry temporal` on it, two `gantry worker`s and
# `gantry server` (API only). Used by `make run-topology` and by the tests (internal/topotest).
#
#   topology.sh up DIR                 start everything; state, logs and pid files in DIR
#   topology.sh down DIR               stop everything and remove PostgreSQL's data
#   topology.sh start NAME DIR         start one component again (postgres|temporal|worker-1|worker-2|server)
#   topology.sh stop NAME DIR [SIG]    stop one (default SIGTERM; SIGKILL for a crash)
#
# Ports (env at `up`, remembered in DIR/env): PG_PORT 15432, TEMPORAL_PORT 17233 (and the next
# seven), API_PORT 18089, METRICS_PORT 19091 (worker-1; worker-2 is the next one).
# GANTRY is the binary (default bin/gantry). PostgreSQL runs with synchronous_commit=off: a
# crashed server process loses nothing, a power cut may lose the last few commits (as SQLite's
# WAL with synchronous=normal in the embedded server).
set -euo pipefail
cmd=${1:?usage: topology.sh up|down|start|stop ...}

root=$(cd "$(dirname "$0")/../.." && pwd)

load_env() { # DIR
  DIR=$(cd "$1" && pwd)
  # shellcheck disable=SC1091
  . "$DIR/env"
}

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$d" ] || [ ! -x "$d/postgres" ]; then
    "$root/hack/topology/install-postgres.sh" >&2
    d=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  fi
  echo "$d"
}

# as_pg runs a PostgreSQL tool as the postgres user when we are root (initdb refuses root).
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

size() { stat -c %s "$1" 2>/dev/null || echo 0; }

wait_for() { # FILE PATTERN SECONDS PID NAME OFFSET: PATTERN in FILE after byte OFFSET
  local i
  for i in $(seq 1 $(($3 * 10))); do
    tail -c +$(($6 + 1)) "$1" 2>/dev/null | grep -q "$2" && return 0
    if ! kill -0 "$4" 2>/dev/null; then
      echo "topology: $5 exited during start; its log ($1):" >&2
      tail -30 "$1" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "topology: $5 not ready after $3 s; its log ($1):" >&2
  tail -30 "$1" >&2
  return 1
}

start_one() { # NAME
  local name=$1 pid off
  off=$(size "$DIR/$name.log")
  case $name in
  postgres)
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PGROOT/postgres.log" -w -t 60 start \
      -o "-p $PG_PORT -k $PGROOT -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c max_connections=400" >/dev/null
    head -1 "$PGDATA/postmaster.pid" > "$DIR/postgres.pid"
    return 0 ;;
  temporal)
    "$GANTRY" temporal --postgres "$PG_URL" --listen "127.0.0.1:$TEMPORAL_PORT" >> "$DIR/temporal.log" 2>&1 &
    pid=$!; echo $pid > "$DIR/temporal.pid"
    wait_for "$DIR/temporal.log" "temporal: serving on .*$TEMPORAL_PORT" 120 $pid temporal "$off" ;;
  worker-1|worker-2)
    local n=${name#worker-}
    "$GANTRY" worker --address "127.0.0.1:$TEMPORAL_PORT" --data-dir "$DIR/$name" \
      --metrics-listen "127.0.0.1:$((METRICS_PORT + n - 1))" --shutdown-grace 30s >> "$DIR/$name.log" 2>&1 &
    pid=$!; echo $pid > "$DIR/$name.pid"
    wait_for "$DIR/$name.log" "worker running" 60 $pid "$name" "$off" ;;
  server)
    "$GANTRY" server --address "127.0.0.1:$TEMPORAL_PORT" --run-worker=false --data-dir "$DIR/server" \
      --listen "127.0.0.1:$API_PORT" >> "$DIR/server.log" 2>&1 &
    pid=$!; echo $pid > "$DIR/server.pid"
    wait_for "$DIR/server.log" "gantry server: API on" 60 $pid server "$off" ;;
  *) echo "topology: unknown component $name (postgres|temporal|worker-1|worker-2|server)" >&2; exit 2 ;;
  esac
}

stop_one() { # NAME [SIGNAL]
  local name=$1 sig=${2:-TERM} pid i
  if [ "$name" = postgres ]; then
    [ -f "$PGDATA/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null || true
    rm -f "$DIR/postgres.pid"
    return 0
  fi
  [ -f "$DIR/$name.pid" ] || return 0
  pid=$(cat "$DIR/$name.pid")
  kill -s "$sig" "$pid" 2>/dev/null || true
  for i in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -s KILL "$pid" 2>/dev/null || true
  rm -f "$DIR/$name.pid"
}

case $cmd in
up)
  mkdir -p "${2:?DIR}"
  DIR=$(cd "$2" && pwd)
  PG_BIN=$(pg_bin)
  # PostgreSQL's data lives where the postgres user can reach it (DIR may be private to root).
  PGROOT=$(mktemp -d /tmp/gantry-pg.XXXXXX)
  PGDATA=$PGROOT/data
  echo temporal > "$PGROOT/pwfile"
  [ "$(id -u)" = 0 ] && chown -R postgres: "$PGROOT"
  cat > "$DIR/env" <<EOF
GANTRY=$(cd "$(dirname "${GANTRY:-$root/bin/gantry}")" && pwd)/$(basename "${GANTRY:-$root/bin/gantry}")
PG_BIN=$PG_BIN
PGROOT=$PGROOT
PGDATA=$PGDATA
PG_PORT=${PG_PORT:-15432}
TEMPORAL_PORT=${TEMPORAL_PORT:-17233}
API_PORT=${API_PORT:-18089}
METRICS_PORT=${METRICS_PORT:-19091}
PG_URL=postgres://temporal:temporal@127.0.0.1:${PG_PORT:-15432}/temporal?sslmode=disable
EOF
  load_env "$DIR"
  as_pg "$PG_BIN/initdb" -D "$PGDATA" -U temporal --pwfile="$PGROOT/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; exit 1; }
  trap '"$0" down "$DIR" >/dev/null 2>&1' ERR
  for c in postgres temporal worker-1 worker-2 server; do start_one $c; done
  trap - ERR
  echo "topology up: Temporal 127.0.0.1:$TEMPORAL_PORT, API http://127.0.0.1:$API_PORT, PostgreSQL 127.0.0.1:$PG_PORT, logs in $DIR"
  ;;
down)
  load_env "${2:?DIR}"
  for c in server worker-1 worker-2; do stop_one $c & done
  wait
  for c in temporal postgres; do stop_one $c; done
  case $PGROOT in /tmp/gantry-pg.*) rm -rf "$PGROOT" ;; esac
  ;;
start) load_env "${3:?DIR}"; start_one "${2:?NAME}" ;;
stop) load_env "${3:?DIR}"; stop_one "${2:?NAME}" "${4:-TERM}" ;;
*) echo "usage: topology.sh up|down|start|stop ..." >&2; exit 2 ;;
esac
