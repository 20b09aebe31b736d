#!/usr/bin/env bash
# Measures putting rushgate in front of a site, in one run, alternating rounds with the baseline:
# requests/s through `rushgate serve --protect` against the same origin straight, and requests/s of the
# nginx check endpoint (GET /v1/rooms/{room}/check) against the null handler. Each server gets one core.
# Usage: bench/protect.sh [-c 64 -d 2s -rounds 9]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate
GOMAXPROCS=1 "$bin/rushgate" loadtest null --addr 127.0.0.1:19095 &   # the origin, and the baseline
GOMAXPROCS=1 RUSHGATE_ADMIN_KEY=bench-admin-key-0123 "$bin/rushgate" serve --addr 127.0.0.1:19087 --data "$bin/data" \
  --log-level warn --protect http://127.0.0.1:19095 --room bench >/dev/null &
for _ in $(seq 50); do curl -fs 127.0.0.1:19087/healthz >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs -X PUT 127.0.0.1:19087/v1/rooms/bench -H 'Authorization: Bearer bench-admin-key-0123' \
  -d '{"capacity": 10, "session_ttl": "1h", "site_url": "http://127.0.0.1:19087/"}' >/dev/null
vt=$(curl -fs -X POST 127.0.0.1:19087/v1/rooms/bench/join | sed 's/.*"visitor_token":"\([^"]*\)".*/\1/')
adm=$(curl -fs 127.0.0.1:19087/v1/rooms/bench/status -H "Authorization: Bearer $vt" | sed 's/.*"admission_token":"\([^"]*\)".*/\1/')
echo "== through the proxy (an admitted visitor's GET) against the origin straight"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19087/shop --null http://127.0.0.1:19095/ \
  --header "Cookie: rg_admission=$adm" --status 200 "$@"
echo "== the check endpoint (an admitted visitor) against the null handler"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19087/v1/rooms/bench/check --null http://127.0.0.1:19095/ \
  --header "Cookie: rg_admission=$adm" --status 204 "$@"
