#!/usr/bin/env bash
# Join requests/s through HTTP on the Redis backend, in one run, against (1) the null net/http handler
# and (2) redis-benchmark sending the same join script straight to Redis at the same concurrency.
# Everything runs on loopback and stops by itself. Usage: bench/redis-join.sh [-c 64] [-d 2s]
conc=64; dur=2s
while [ $# -gt 0 ]; do case "$1" in -c) conc=$2; shift 2;; -d) dur=$2; shift 2;; *) echo "unknown flag $1"; exit 2;; esac; done
source "$(dirname "$0")/lib.sh"
start_redis_and_rushgate 19092 19082
curl -fs -X PUT 127.0.0.1:19082/v1/rooms/bench -H 'Authorization: Bearer bench' \
  -d '{"capacity": 1000, "session_ttl": "1h", "idle_timeout": "1h"}' >/dev/null

echo "== HTTP: null handler vs rushgate join on Redis (each server on 1 core, concurrency $conc)"
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
"$bin/rgload" join --target http://127.0.0.1:19082/v1/rooms/bench/join --null http://127.0.0.1:19092/ \
  -c "$conc" -d "$dur" -rounds 9 -cpu "null=$null_pid,rushgate=$rushgate_pid,redis=$redis_pid" | tee "$bin/http.txt"
# How joins reached Redis: concurrent joins share calls of the visit script (internal/redisstore/visits.go),
# counted by rushgate's own batch-size metric; Redis's script time (all scripts, the gate's included) per join.
curl -fs 127.0.0.1:19082/metrics | awk '/^rushgate_redis_visit_batch_size_(sum|count) / {v[$1] = $2}
  END {print v["rushgate_redis_visit_batch_size_sum"], v["rushgate_redis_visit_batch_size_count"]}' > "$bin/batches.txt"
read -r joins calls < "$bin/batches.txt"
redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[=,]' -v j="$joins" -v c="$calls" '/^cmdstat_evalsha:/ {
  printf "%d joins in %d visit-script calls: %.1f joins per call; %.2f us of Redis script time per join\n", j, c, j / c, $4 / j }'

echo "== redis-benchmark: the same join script, EVALSHA straight to Redis, concurrency $conc"
sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat internal/redisstore/lua/lib.lua; echo; cat internal/redisstore/lua/visit.lua)")
k='rg:{room:bench}:'
redis-benchmark -p "$port" -c "$conc" -n 200000 -r 100000000 -q \
  EVALSHA "$sha" 6 "${k}meta" "${k}queue" "${k}seen" "${k}active" "${k}adm" "${k}window" \
  "" bench 86400 "rb___rand_int__" new 12345 bench | tr '\r' '\n' | grep 'requests per second' | tee "$bin/rb.txt"
rb=$(grep -oE '[0-9.]+ requests per second' "$bin/rb.txt" | head -1 | cut -d' ' -f1)
join=$(awk '/^[0-9]+ /{print $3}' "$bin/http.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
null=$(awk '/^[0-9]+ /{print $2}' "$bin/http.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
awk -v j="$join" -v n="$null" -v r="$rb" 'BEGIN {
  printf "median join req/s %.0f, null %.0f, redis-benchmark script calls/s %.0f\n", j, n, r
  printf "join/null %.2f   join/redis-benchmark %.2f\n", j / n, j / r }'
