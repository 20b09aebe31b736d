#!/usr/bin/env bash
# What ended drops and auctions, and empty rooms, cost Redis while nobody calls: one rushgate instance
# on a throwaway redis-server, holding N drops closed with stock left, N auctions closed without bids
# and ROOMS rooms nobody joined, then the commands Redis received per second over a minute (INFO
# commandstats): what is over or empty is sampled once a minute, so a shorter window would catch that
# minute's reads or not. Then ten scrapes of /metrics, and what Redis received meanwhile. Loopback only;
# stops by itself.
# Usage: bench/idle-redis.sh [N] [ROOMS]   (defaults 300 and 0)
source "$(dirname "$0")/lib.sh"
n=${1:-300}
rooms=${2:-0}
start_redis_and_rushgate 19094 19085
api=127.0.0.1:19085
auth='Authorization: Bearer bench-admin-key-0123'
past=$(date -u -d '-2 hour' +%Y-%m-%dT%H:%M:%SZ)
closed=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)
soon=$(date -u -d '+3 second' +%Y-%m-%dT%H:%M:%SZ)
for i in $(seq "$n"); do
  curl -fsS -X PUT -H "$auth" "$api/v1/drops/idle$i" -d "{\"stock\": 5, \"opens_at\": \"$past\", \"closes_at\": \"$closed\"}" >/dev/null
  curl -fsS -X PUT -H "$auth" "$api/v1/auctions/idle$i" -d "{\"title\": \"Lot\", \"currency\": \"EUR\", \"start_price\": 100, \"increment\": 1, \"starts_at\": \"$past\", \"ends_at\": \"$soon\"}" >/dev/null
done
for i in $(seq "$rooms"); do
  curl -fsS -X PUT -H "$auth" "$api/v1/rooms/idle$i" -d '{"capacity": 100}' >/dev/null
done
sleep 10 # the auctions close, and the recorders and samplers see that all is over
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
sleep 60
echo "Redis commands a second, one idle instance holding $n closed drops, $n closed auctions and $rooms empty rooms:"
redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /config/ {
  sub("cmdstat_", "", $1); all += $3; printf "  %-14s %9.1f\n", $1, $3 / 60 } END { printf "  %-14s %9.1f\n", "all", all / 60 }'
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
t0=$(date +%s%N)
for _ in $(seq 10); do curl -fsS -H "$auth" "$api/metrics" >"$bin/metrics.txt"; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
calls=$(redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /config/ { all += $3 } END { print all + 0 }')
echo "ten scrapes of /metrics in $ms ms: $calls Redis commands in all meanwhile (the idle rate above included);" \
  "$(grep -c '^rushgate_\(drop\|auction\|room\)_' "$bin/metrics.txt") series of rooms, drops and auctions a scrape"
