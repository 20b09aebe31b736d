#!/usr/bin/env bash
# Claims or bids against the null handler at several concurrencies, each on fresh servers, and their
# capacities: each server's best median requests/s over the concurrencies, and the ratio of the two
# (how bench/redis-join.sh compares joins). A closed loop of 64 requests leaves the machine idle while
# each waits for its round trip to Redis; the null handler reaches its capacity at 64 already.
# Usage: bench/capacity.sh claims|bids [-c "64 256 512"] [other flags of bench/drop-claims.sh or
# bench/auction-bids.sh, such as -rounds 5]. Loopback only; stops by itself.
set -euo pipefail
cd "$(dirname "$0")"
kind=${1:-}; shift || true
case "$kind" in
  claims) script=./drop-claims.sh ;;
  bids) script=./auction-bids.sh ;;
  *) echo "usage: bench/capacity.sh claims|bids [-c \"64 256 512\"] [flags]"; exit 2 ;;
esac
concs="64 256 512"
args=()
while [ $# -gt 0 ]; do
  case "$1" in -c) concs=$2; shift 2 ;; *) args+=("$1"); shift ;; esac
done
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
for c in $concs; do
  echo "== $kind at $c connections"
  out=$("$script" -c "$c" "${args[@]}" 2>&1)
  echo "$out" | grep -E '^[0-9]+ |median ratio'
  # the medians of the rounds' requests/s (columns 2 and 3), and the ratio and p99 the script printed
  rounds=$(echo "$out" | grep -E '^[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+$')
  median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  null=$(echo "$rounds" | awk '{print $2}' | median)
  target=$(echo "$rounds" | awk '{print $3}' | median)
  ratio=$(echo "$out" | sed -n 's/.*median ratio: \([0-9.]*\);.*/\1/p')
  p99=$(echo "$out" | sed -n 's/.*median ratio:.*p99 \([0-9.]*[a-zµ]*s\).*/\1/p')
  echo "$c $null $target $ratio $p99" >> "$summary"
done
echo "== summary ($kind)"
printf "%-12s %12s %12s %8s %10s\n" connections "null req/s" "$kind/s" ratio p99
awk '{printf "%-12s %12s %12s %8s %10s\n", $1, $2, $3, $4, $5}' "$summary"
awk '$2 > n {n = $2; nc = $1} $3 > x {x = $3; xc = $1}
  END {printf "capacity (best median req/s): null %.0f (at %d), target %.0f (at %d): %.2f\n", n, nc, x, xc, x / n}' "$summary"
