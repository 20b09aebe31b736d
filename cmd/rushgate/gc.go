package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// gcPercent is the collector's GOGC when the environment sets none. rushgate's live heap is small (lines,
// stocks and auctions take little) next to what a crowd's requests allocate, so at Go's default of 100
// it collected several times a second under load and spent a tenth of its CPU there; at 400 a bid of
// the embedded backend costs 10-15% less CPU (docs/benchmarks.md). The heap may grow to five times the
// live data, bounded by the memory limit that gcDefaults also sets.
const gcPercent = 400

// gcDefaults sets the collector for a server, unless the environment (GOGC, GOMEMLIMIT) already says
// how: GOGC gcPercent, and a soft memory limit of nine tenths of the memory rushgate may use (the
// cgroup's limit in a container, else the machine's), so that the larger heap target never pushes it
// out of memory: near the limit the collector runs as often as it must. It returns what it set, for
// the start log.
func gcDefaults(getenv func(string) string) (percent, limit int64) {
	percent, limit = -1, -1
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
		percent = gcPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		if avail, ok := memoryAvailable(readFile("/sys/fs/cgroup/memory.max"), readFile("/proc/meminfo")); ok {
			limit = avail / 10 * 9
			debug.SetMemoryLimit(limit)
		}
	}
	return percent, limit
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// memoryAvailable returns the memory the process may use: the cgroup v2 limit (memory.max) when it has
// one, else the machine's total from /proc/meminfo; false when neither says.
func memoryAvailable(cgroupMax, meminfo []byte) (int64, bool) {
	if s := strings.TrimSpace(string(cgroupMax)); s != "" && s != "max" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			return n, true
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 && kb < 1<<53 {
				return kb << 10, true
			}
		}
	}
	return 0, false
}
