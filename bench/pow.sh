#!/usr/bin/env bash
# A scripted attacker on one core joins a room as fast as it can, solving every proof-of-work challenge,
# at difficulties 0 (no challenge), 16, 18 and 20: the joins/s it gets against no challenge, and the
# server's CPU per join. Usage: bench/pow.sh [-d 5s] [-difficulties 0,16,18,20]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate
GOMAXPROCS=1 RUSHGATE_ADMIN_KEY=bench-admin-key-0123 "$bin/rushgate" serve --addr 127.0.0.1:19086 --data "$bin/data" --log-level warn >/dev/null &
pid=$!
for _ in $(seq 50); do curl -fs 127.0.0.1:19086/healthz >/dev/null 2>&1 && break; sleep 0.1; done
"$bin/rushgate" loadtest pow --target http://127.0.0.1:19086 --admin-key bench-admin-key-0123 --pid "$pid" "$@"
go test -run '^$' -bench BenchmarkVerify -benchtime 200000x ./internal/challenge | grep Benchmark
