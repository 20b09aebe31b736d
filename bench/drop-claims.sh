#!/usr/bin/env bash
# Successful drop claims/s through HTTP on the Redis backend, against the null handler in the same run,
# with the p99 claim latency. Loopback only; stops by itself. Usage: bench/drop-claims.sh [-c 64] [-d 5s] [-visitors 60000]
source "$(dirname "$0")/lib.sh"
start_redis_and_rushgate 19094 19085
echo "one drop on Redis (rushgate and the null handler on 1 core each; SQL record: SQLite via the outbox)"
"$bin/rgload" claim --target http://127.0.0.1:19085 --null http://127.0.0.1:19094/ --admin-key bench-admin-key-0123 "$@"
