#!/usr/bin/env bash
# Join requests/s through HTTP on the Redis backend, in one run, against (1) the null net/http handler
# and (2) redis-benchmark sending the same join script straight to Redis at the same concurrency.
# Everything runs on loopback and stops by itself. Usage: bench/redis-join.sh [-c 64] [-d 5s]
set -euo pipefail
cd "$(dirname "$0")/.."
conc=64; dur=5s
while [ $# -gt 0 ]; do case "$1" in -c) conc=$2; shift 2;; -d) dur=$2; shift 2;; *) echo "unknown flag $1"; exit 2;; esac; done
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate
go build -o "$bin/rgload" ./cmd/rgload
port=$(( 20000 + RANDOM % 10000 ))
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$bin" >/dev/null &
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
GOMAXPROCS=1 "$bin/rgload" null --addr 127.0.0.1:19092 &
GOMAXPROCS=1 "$bin/rushgate" serve --addr 127.0.0.1:19082 --data "$bin/data" --admin-key bench \
  --redis "redis://127.0.0.1:$port/0" --log-level warn >/dev/null &
for _ in $(seq 50); do curl -fs 127.0.0.1:19082/healthz >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs -X PUT 127.0.0.1:19082/v1/rooms/bench -H 'Authorization: Bearer bench' \
  -d '{"capacity": 1000, "session_ttl": "1h", "idle_timeout": "1h"}' >/dev/null

echo "== HTTP: null handler vs rushgate join on Redis (each server on 1 core, concurrency $conc)"
"$bin/rgload" join --target http://127.0.0.1:19082/v1/rooms/bench/join --null http://127.0.0.1:19092/ \
  -c "$conc" -d "$dur" -rounds 3 | tee "$bin/http.txt"

echo "== redis-benchmark: the same join script, EVALSHA straight to Redis, concurrency $conc"
sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat internal/redisstore/lua/lib.lua; echo; cat internal/redisstore/lua/visit.lua)")
k='rg:{room:bench}:'
redis-benchmark -p "$port" -c "$conc" -n 200000 -r 100000000 -q \
  EVALSHA "$sha" 6 "${k}meta" "${k}queue" "${k}seen" "${k}active" "${k}adm" "${k}window" \
  "rb___rand_int__" join "" 12345 | tee "$bin/rb.txt"
rb=$(grep -oE '[0-9.]+ requests per second' "$bin/rb.txt" | head -1 | cut -d' ' -f1)
join=$(awk '/^[0-9]+ /{print $3}' "$bin/http.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
null=$(awk '/^[0-9]+ /{print $2}' "$bin/http.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
awk -v j="$join" -v n="$null" -v r="$rb" 'BEGIN {
  printf "median join req/s %.0f, null %.0f, redis-benchmark script calls/s %.0f\n", j, n, r
  printf "join/null %.2f   join/redis-benchmark %.2f\n", j / n, j / r }'
