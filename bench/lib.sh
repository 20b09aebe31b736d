# Shared setup of the Redis benchmarks, sourced by them: builds the binaries into $bin, starts a
# throwaway redis-server, the null handler and rushgate on loopback, each server on one core
# (SERVER_PROCS=2: both), and stops everything when the script exits. RUSHGATE_FLAGS adds flags to
# rushgate serve and RUSHGATE_ENV environment settings (e.g. GOGC=400), to compare settings;
# REDIS_REPLICA=1 starts a replica of the Redis too (its CPU reported as "replica").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate

# start_redis_and_rushgate NULL_PORT RUSHGATE_PORT: sets $port (Redis), $redis_pid, $null_pid and
# $rushgate_pid, and waits until all answer. With BACKEND=memory rushgate runs on its embedded backend
# (its record a SQLite file under $bin) and no Redis is started: $redis_pid and $port stay empty.
start_redis_and_rushgate() {
  local redis_flags=()
  port=""; redis_pid=""; replica_pid=""
  if [ "${BACKEND:-redis}" = redis ]; then
    port=$(( 20000 + RANDOM % 10000 ))
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$bin" >/dev/null &
    redis_pid=$!
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis_flags=(--redis "redis://127.0.0.1:$port/0")
    if [ -n "${REDIS_REPLICA:-}" ]; then # a replica of it, for RUSHGATE_FLAGS="--redis-replicas 1"
      redis-server --port $((port + 1)) --bind 127.0.0.1 --save '' --appendonly no --dir "$bin" \
        --replicaof 127.0.0.1 "$port" >/dev/null &
      replica_pid=$!
      for _ in $(seq 100); do
        redis-cli -p "$port" INFO replication | grep -q 'state=online' && break; sleep 0.1
      done
    fi
  fi
  GOMAXPROCS=${SERVER_PROCS:-1} "$bin/rushgate" loadtest null --addr "127.0.0.1:$1" &
  null_pid=$!
  env GOMAXPROCS=${SERVER_PROCS:-1} ${RUSHGATE_ENV:-} "$bin/rushgate" serve --addr "127.0.0.1:$2" --data "$bin/data" --admin-key bench-admin-key-0123 \
    "${redis_flags[@]}" --log-level warn ${RUSHGATE_FLAGS:-} >/dev/null &
  rushgate_pid=$!
  for _ in $(seq 50); do curl -fs "127.0.0.1:$2/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
}

# processes: the -cpu list of what runs: the null handler, rushgate, and Redis when there is one.
processes() {
  echo "null=$null_pid,rushgate=$rushgate_pid${redis_pid:+,redis=$redis_pid}${replica_pid:+,replica=$replica_pid}"
}

# stop_servers stops what start_redis_and_rushgate started, so that it can start afresh.
stop_servers() {
  kill "$null_pid" "$rushgate_pid" "$redis_pid" $replica_pid 2>/dev/null || true
  wait "$null_pid" "$rushgate_pid" "$redis_pid" $replica_pid 2>/dev/null || true
}

# commands_per OPS KIND: Redis's calls of each command since the last CONFIG RESETSTAT, per KIND (OPS of
# them were made), from INFO commandstats: how many client commands one claim or bid costs.
commands_per() {
  [ -n "$port" ] || return 0
  echo "Redis commands per $2 ($1 ${2}s; INFO commandstats since the first round):"
  redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$1" -v k="$2" '/^cmdstat_/ {
    sub("cmdstat_", "", $1); printf "  %-14s %10d calls  %6.3f per %s  %7.2f us each\n", $1, $3, $3 / n, k, $7 }'
}
