#!/usr/bin/env bash
# Successful drop claims/s through HTTP on the Redis backend, against the null handler in the
# same run, with the p99 bid latency. Loopback only; stops by itself. Usage: bench/drop-claims.sh [-c 64] [-d 5s]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate
go build -o "$bin/rgload" ./cmd/rgload
port=$(( 20000 + RANDOM % 10000 ))
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$bin" >/dev/null &
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
GOMAXPROCS=1 "$bin/rgload" null --addr 127.0.0.1:19094 &
GOMAXPROCS=1 "$bin/rushgate" serve --addr 127.0.0.1:19085 --data "$bin/data" --admin-key bench \
  --redis "redis://127.0.0.1:$port/0" --log-level warn >/dev/null &
for _ in $(seq 50); do curl -fs 127.0.0.1:19085/healthz >/dev/null 2>&1 && break; sleep 0.1; done
echo "one drop on Redis (rushgate and the null handler on 1 core each; SQL record: SQLite via the outbox)"
"$bin/rgload" claim --target http://127.0.0.1:19085 --null http://127.0.0.1:19094/ --admin-key bench "$@"
