#!/usr/bin/env bash
# Measures rushgate's join requests/s on the embedded backend against a null net/http handler, in one run,
# on loopback, and prints the ratio. Usage: bench/join.sh [rushgate loadtest join flags, e.g. -c 64 -d 5s -want 0.8]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate
GOMAXPROCS=${SERVER_PROCS:-1} "$bin/rushgate" loadtest null --addr 127.0.0.1:19090 &
null_pid=$!
RUSHGATE_ADMIN_KEY=bench-admin-key-0123 GOMAXPROCS=${SERVER_PROCS:-1} "$bin/rushgate" serve --addr 127.0.0.1:19080 \
  --data "$bin/data" --log-level warn >/dev/null &
rushgate_pid=$!
for _ in $(seq 50); do curl -fs 127.0.0.1:19080/healthz >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs -X PUT 127.0.0.1:19080/v1/rooms/bench -H 'Authorization: Bearer bench-admin-key-0123' \
  -d '{"capacity": 1000, "session_ttl": "1h", "idle_timeout": "1h"}' >/dev/null
echo "join on the memory backend vs the null handler (each server on ${SERVER_PROCS:-1} core, load on the rest)"
"$bin/rushgate" loadtest join --target http://127.0.0.1:19080/v1/rooms/bench/join --null http://127.0.0.1:19090/ \
  -cpu "null=$null_pid,rushgate=$rushgate_pid" "$@"
