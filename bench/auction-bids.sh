#!/usr/bin/env bash
# Bid requests/s on one hot auction through HTTP on the Redis backend (BACKEND=memory: the embedded one) against the null handler, in
# alternating rounds (null first, then bids first, ...), with the p99 bid latency, the CPU each process
# spent per request, and the Redis commands per bid. Loopback only; stops by itself.
# Usage: bench/auction-bids.sh [-c 64] [-d 2s] [-rounds 9] [-margin 200] [-want 0.6]
source "$(dirname "$0")/lib.sh"
start_redis_and_rushgate 19093 19084
echo "one hot auction on ${BACKEND:-redis} (rushgate and the null handler on ${SERVER_PROCS:-1} core(s) each; SQL record: SQLite)"
[ -z "$port" ] || redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
"$bin/rushgate" loadtest bid --target http://127.0.0.1:19084 --null http://127.0.0.1:19093/ --admin-key bench-admin-key-0123 \
  -cpu "$(processes)" "$@" | tee "$bin/out.txt"
commands_per "$(awk '/^bids in all rounds:/ {print $5}' "$bin/out.txt")" bid
