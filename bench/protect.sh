#!/usr/bin/env bash
# Measures putting rushgate in front of a site, in one run, alternating rounds with the baseline:
# requests/s through `rushgate serve --protect` against the same origin straight, first with the null
# handler as the origin, then with an origin that renders a shop's page of 20 tickets for each request
# (`rushgate loadtest null --page 20`), and requests/s of the nginx check endpoint
# (GET /v1/rooms/{room}/check) against the null handler. Each server gets one core.
# Usage: bench/protect.sh [-c 64 -d 2s -rounds 9]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/rushgate" ./cmd/rushgate
GOMAXPROCS=1 "$bin/rushgate" loadtest null --addr 127.0.0.1:19095 &   # the origin, and the baseline
null_pid=$!
# protect ORIGIN_PORT: starts rushgate on one core in front of the origin at that port, with room bench,
# and sets $rg_pid and $adm, an admitted visitor's admission token.
protect() {
  GOMAXPROCS=1 RUSHGATE_ADMIN_KEY=bench-admin-key-0123 "$bin/rushgate" serve --addr 127.0.0.1:19087 --data "$bin/data-$1" \
    --log-level warn --protect "http://127.0.0.1:$1" --room bench >/dev/null &
  rg_pid=$!
  for _ in $(seq 50); do curl -fs 127.0.0.1:19087/healthz >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fs -X PUT 127.0.0.1:19087/v1/rooms/bench -H 'Authorization: Bearer bench-admin-key-0123' \
    -d '{"capacity": 10, "session_ttl": "1h", "site_url": "http://127.0.0.1:19087/"}' >/dev/null
  vt=$(curl -fs -X POST 127.0.0.1:19087/v1/rooms/bench/join | sed 's/.*"visitor_token":"\([^"]*\)".*/\1/')
  adm=$(curl -fs 127.0.0.1:19087/v1/rooms/bench/status -H "Authorization: Bearer $vt" | sed 's/.*"admission_token":"\([^"]*\)".*/\1/')
}
protect 19095
echo "== through the proxy (an admitted visitor's GET) against the origin straight: the null handler as the origin"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19087/shop --null http://127.0.0.1:19095/ \
  --header "Cookie: rg_admission=$adm" --status 200 -cpu "origin=$null_pid,rushgate=$rg_pid" "$@"
echo "== the check endpoint (an admitted visitor) against the null handler"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19087/v1/rooms/bench/check --null http://127.0.0.1:19095/ \
  --header "Cookie: rg_admission=$adm" --status 204 "$@"
kill "$rg_pid"; wait "$rg_pid" 2>/dev/null || true
GOMAXPROCS=1 "$bin/rushgate" loadtest null --addr 127.0.0.1:19096 --page 20 &   # a page origin
page_pid=$!
protect 19096
echo "== through the proxy against the origin straight: an origin that renders a page of 20 tickets"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19087/shop --null http://127.0.0.1:19096/ \
  --header "Cookie: rg_admission=$adm" --status 200 -cpu "origin=$page_pid,rushgate=$rg_pid" "$@"
kill "$rg_pid"; wait "$rg_pid" 2>/dev/null || true
# A reference: nginx, one worker, as a plain reverse proxy (no admission check) in front of the same two
# origins, with kept upstream connections. Skipped where nginx is not installed.
command -v nginx >/dev/null || exit 0
mkdir -p "$bin/nginx"
cat >"$bin/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
error_log $bin/nginx/error.log warn;
pid $bin/nginx/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $bin/nginx/body; proxy_temp_path $bin/nginx/proxy; fastcgi_temp_path $bin/nginx/fcgi;
  uwsgi_temp_path $bin/nginx/uwsgi; scgi_temp_path $bin/nginx/scgi;
  upstream null { server 127.0.0.1:19095; keepalive 128; }
  upstream page { server 127.0.0.1:19096; keepalive 128; }
  server { listen 127.0.0.1:19088; location / { proxy_pass http://null; proxy_http_version 1.1; proxy_set_header Connection ""; } }
  server { listen 127.0.0.1:19089; location / { proxy_pass http://page; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
CONF
nginx -c "$bin/nginx/nginx.conf" -p "$bin/nginx" &
nginx_pid=$!
for _ in $(seq 50); do curl -fs 127.0.0.1:19088/ >/dev/null 2>&1 && break; sleep 0.1; done
workers=$(pgrep -d, -P "$nginx_pid")
echo "== for reference, nginx (one worker, no admission check) against the origin straight: the null handler"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19088/shop --null http://127.0.0.1:19095/ \
  --status 200 -cpu "origin=$null_pid,nginx=$workers" "$@"
echo "== for reference, nginx against the origin straight: the page of 20 tickets"
"$bin/rushgate" loadtest get --target http://127.0.0.1:19089/shop --null http://127.0.0.1:19096/ \
  --status 200 -cpu "origin=$page_pid,nginx=$workers" "$@"
