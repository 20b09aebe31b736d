#!/usr/bin/env bash
# Successful drop claims/s through HTTP on the Redis backend (BACKEND=memory: the embedded one) against the null handler, in alternating
# rounds (null first, then claims first, ...), with the p99 claim latency, the CPU each process spent
# per request, and the Redis commands per claim. Loopback only; stops by itself.
# Usage: bench/drop-claims.sh [-c 64] [-d 2s] [-rounds 9] [-visitors 150000] [-want 0.6]
source "$(dirname "$0")/lib.sh"
start_redis_and_rushgate 19094 19085
echo "drops on ${BACKEND:-redis} (rushgate and the null handler on ${SERVER_PROCS:-1} core(s) each; SQL record: SQLite)"
[ -z "$port" ] || redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
"$bin/rushgate" loadtest claim --target http://127.0.0.1:19085 --null http://127.0.0.1:19094/ --admin-key bench-admin-key-0123 \
  -cpu "$(processes)" "$@" | tee "$bin/out.txt"
commands_per "$(awk '/^claims in all rounds:/ {print $5}' "$bin/out.txt")" claim
