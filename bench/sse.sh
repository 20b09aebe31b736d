#!/usr/bin/env bash
# Opens 10,000 idle SSE streams on one rushgate instance, reports the server's memory per stream, then
# opens the room and reports how fast every stream receives its admission. Usage: bench/sse.sh [-n 10000]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
ulimit -n "$(ulimit -Hn)"
go build -o "$bin/rushgate" ./cmd/rushgate
RUSHGATE_ADMIN_KEY=bench-admin-key-0123 "$bin/rushgate" serve --addr 127.0.0.1:19081 --data "$bin/data" --log-level warn --streams-per-address 100000 >/dev/null &
pid=$!
for _ in $(seq 50); do curl -fs 127.0.0.1:19081/healthz >/dev/null 2>&1 && break; sleep 0.1; done
"$bin/rushgate" loadtest sse --target http://127.0.0.1:19081 --admin-key bench-admin-key-0123 --pid "$pid" "$@"
