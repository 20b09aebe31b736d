#!/usr/bin/env bash
# The embedded backend's three speed figures in one run (issue 15): joins with the line journal on,
# successful drop claims and bid requests, each against the null handler in alternating rounds, then a
# summary against the targets (joins >= 0.85, claims >= 0.5 with p99 <= 20 ms, bids >= 0.6).
# Loopback only; each script stops by itself. Usage: bench/embedded.sh [-rounds 9]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bench/join.sh "$@" | tee "$out/join"
BACKEND=memory bench/drop-claims.sh "$@" | tee "$out/claim"
BACKEND=memory bench/auction-bids.sh "$@" | tee "$out/bid"
echo
echo "embedded backend, one run:"
for k in join claim bid; do
  awk -v k="$k" '$0 ~ "^" k "/null median ratio" {
    want = (k == "join") ? 0.85 : (k == "claim") ? 0.5 : 0.6
    ratio = $4; sub(";", "", ratio)
    p99 = $10; ms = p99 + 0                     # e.g. 10.575ms, 950µs or 1.2s
    if (p99 ~ /µs$/) ms /= 1000; else if (p99 !~ /ms$/) ms *= 1000
    ok = ratio + 0 >= want && (k != "claim" || ms <= 20)
    printf "  %-6s %s of the null handler, p99 %s (target >= %.2f%s): %s\n", k, ratio, p99, want,
      (k == "claim") ? ", p99 <= 20ms" : "", ok ? "met" : "NOT met"
  }' "$out/$k"
done
