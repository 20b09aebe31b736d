#!/usr/bin/env bash
# Join requests/s through HTTP on the Redis backend, in one run, against (1) the null net/http handler
# and (2) redis-benchmark sending the same join script straight to Redis at the same concurrency; at
# each concurrency given, each on freshly started servers. Everything runs on loopback and stops by
# itself. The summary also compares capacities: each server's best requests/s over the concurrencies.
# The null handler reaches its capacity at 64 connections already, while a join, which waits for a
# round trip to Redis, needs more connections in flight to reach its own (docs/benchmarks.md).
# Usage: bench/redis-join.sh [-c "64 256 512"] [-d 2s]
concs="64 256 512"; dur=2s
while [ $# -gt 0 ]; do case "$1" in -c) concs=$2; shift 2;; -d) dur=$2; shift 2;; *) echo "unknown flag $1"; exit 2;; esac; done
source "$(dirname "$0")/lib.sh"

# measure CONC: one full measurement on fresh servers; appends "CONC JOIN/NULL JOIN/REDIS-BENCHMARK
# NULL-REQ/S JOIN-REQ/S" to $bin/summary.txt.
measure() {
  local conc=$1
  start_redis_and_rushgate 19092 19082
  curl -fs -X PUT 127.0.0.1:19082/v1/rooms/bench -H 'Authorization: Bearer bench-admin-key-0123' \
    -d '{"capacity": 1000, "session_ttl": "1h", "idle_timeout": "1h"}' >/dev/null

  echo "== HTTP: null handler vs rushgate join on Redis (each server on 1 core, concurrency $conc)"
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  "$bin/rushgate" loadtest join --target http://127.0.0.1:19082/v1/rooms/bench/join --null http://127.0.0.1:19092/ \
    -c "$conc" -d "$dur" -rounds 9 -cpu "null=$null_pid,rushgate=$rushgate_pid,redis=$redis_pid" | tee "$bin/http.txt"
  # How joins reached Redis: concurrent joins share calls of the visit script (internal/redisstore/visits.go),
  # counted by rushgate's own batch-size metric; Redis's script time (all scripts, the gate's included) per join.
  curl -fs 127.0.0.1:19082/metrics -H 'Authorization: Bearer bench-admin-key-0123' | awk '/^rushgate_redis_visit_batch_size_(sum|count) / {v[$1] = $2}
    END {print v["rushgate_redis_visit_batch_size_sum"], v["rushgate_redis_visit_batch_size_count"]}' > "$bin/batches.txt"
  local joins calls
  read -r joins calls < "$bin/batches.txt"
  redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[=,]' -v j="$joins" -v c="$calls" '/^cmdstat_evalsha:/ {
    printf "%d joins in %d visit-script calls: %.1f joins per call; %.2f us of Redis script time per join\n", j, c, j / c, $4 / j }'

  # Every join of the HTTP benchmark is a new visitor's: the script runs in mode 'new' (no line pointer,
  # see lua/visit.lua), one visitor per call, as an unbatched join would.
  echo "== redis-benchmark: the same join script, EVALSHA straight to Redis, concurrency $conc"
  local sha k='rg:{room:bench}:'
  sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat internal/redisstore/lua/lib.lua; echo; cat internal/redisstore/lua/visit.lua)")
  redis-benchmark -p "$port" -c "$conc" -n 200000 -r 100000000 -q \
    EVALSHA "$sha" 7 "${k}meta" "${k}queue" "${k}seen" "${k}active" "${k}adm" "${k}window" "${k}fences" \
    "" bench 86400 "rb___rand_int__" new 12345 "" | tr '\r' '\n' | grep 'requests per second' | tee "$bin/rb.txt"
  local rb join null
  rb=$(grep -oE '[0-9.]+ requests per second' "$bin/rb.txt" | head -1 | cut -d' ' -f1)
  join=$(awk '/^[0-9]+ /{print $3}' "$bin/http.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  null=$(awk '/^[0-9]+ /{print $2}' "$bin/http.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  awk -v j="$join" -v n="$null" -v r="$rb" 'BEGIN {
    printf "median join req/s %.0f, null %.0f, redis-benchmark script calls/s %.0f\n", j, n, r }'
  # the load tool's median of the nine round ratios, join over redis-benchmark, and the medians of the rounds
  awk -v c="$conc" -v j="$join" -v n="$null" -v r="$rb" '/^join\/null median ratio/ {
    printf "%d %.2f %.2f %.0f %.0f\n", c, $4, j / r, n, j }' "$bin/http.txt" >> "$bin/summary.txt"
  stop_servers
}

for conc in $concs; do
  measure "$conc"
done
echo "== summary"
printf "%-12s %10s %22s %12s %12s\n" concurrency join/null join/redis-benchmark "null req/s" "join req/s"
awk '{printf "%-12s %10s %22s %12s %12s\n", $1, $2, $3, $4, $5}' "$bin/summary.txt"
awk '$4 > n {n = $4; nc = $1} $5 > j {j = $5; jc = $1}
  END {printf "capacity (best median req/s): null %.0f (at %d), join %.0f (at %d): join/null %.2f\n", n, nc, j, jc, j / n}' \
  "$bin/summary.txt"
