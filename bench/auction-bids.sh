#!/usr/bin/env bash
# Accepted bids/s on one hot auction through HTTP on the Redis backend, against the null handler in the
# same run, with the p99 bid latency. Loopback only; stops by itself. Usage: bench/auction-bids.sh [-c 64] [-d 5s] [-margin 200]
source "$(dirname "$0")/lib.sh"
start_redis_and_rushgate 19093 19084
echo "one hot auction on Redis (rushgate and the null handler on 1 core each; SQL record: SQLite via the outbox)"
"$bin/rgload" bid --target http://127.0.0.1:19084 --null http://127.0.0.1:19093/ --admin-key bench-admin-key-0123 "$@"
