package loadtest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// process is one process whose CPU time is charged to the requests of a round.
type process struct {
	name string
	pid  int // 0: the load tool itself
}

// parseProcesses reads "name=pid,name=pid" and adds the load tool itself, which shares the machine.
func parseProcesses(s string) ([]process, error) {
	var ps []process
	for f := range strings.SplitSeq(s, ",") {
		if f == "" {
			continue
		}
		name, pid, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 {
			return nil, fmt.Errorf("-cpu: %q is not name=pid", f)
		}
		ps = append(ps, process{name, n})
	}
	if len(ps) == 0 {
		return nil, nil
	}
	return append(ps, process{name: "loadtest"}), nil
}

// cpuTime returns the user plus system CPU time a process has used.
func cpuTime(pid int) (time.Duration, error) {
	if pid == 0 {
		return ownCPUTime()
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it are fixed: utime and stime are the
	// 12th and 13th after the closing parenthesis.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	return time.Duration(u+s) * clockTick, nil
}

// cpuMeter collects, per kind of round, each process's CPU time per request.
type cpuMeter struct {
	procs []process
	per   map[string]map[string][]float64 // round kind -> process -> µs per request, by round
}

func newCPUMeter(procs []process) *cpuMeter {
	return &cpuMeter{procs: procs, per: map[string]map[string][]float64{}}
}

// measure runs one round and charges each process's CPU time to its successful requests.
func (m *cpuMeter) measure(kind string, round func() loadResult) (loadResult, error) {
	before, err := m.read()
	if err != nil {
		return loadResult{}, err
	}
	r := round()
	after, err := m.read()
	if err != nil || r.ok == 0 || len(m.procs) == 0 {
		return r, err
	}
	if m.per[kind] == nil {
		m.per[kind] = map[string][]float64{}
	}
	for i, p := range m.procs {
		us := float64(after[i]-before[i]) / float64(time.Microsecond) / float64(r.ok)
		m.per[kind][p.name] = append(m.per[kind][p.name], us)
	}
	return r, nil
}

func (m *cpuMeter) read() ([]time.Duration, error) {
	ts := make([]time.Duration, len(m.procs))
	for i, p := range m.procs {
		t, err := cpuTime(p.pid)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

// report prints the median CPU time per request of each process in each kind of round, then the ratio
// of the first kind's total to the last's: while the machine is saturated, the ratio of their
// requests/s cannot pass it, however the work is scheduled. CPU time is read in 10 ms ticks, so a
// figure is only as good as the round is long.
func (m *cpuMeter) report(kinds ...string) {
	if len(m.procs) == 0 {
		return
	}
	fmt.Println("CPU time per request, median of the rounds (µs):")
	totals := make([]float64, len(kinds))
	for i, k := range kinds {
		var parts []string
		total := 0.0
		for _, p := range m.procs {
			v := slices.Clone(m.per[k][p.name])
			if len(v) == 0 {
				continue
			}
			slices.Sort(v)
			parts = append(parts, fmt.Sprintf("%s %.1f", p.name, v[len(v)/2]))
			total += v[len(v)/2]
		}
		fmt.Printf("  %s rounds: %s; all %.1f\n", k, strings.Join(parts, ", "), total)
		totals[i] = total
	}
	if last := totals[len(totals)-1]; len(kinds) > 1 && last > 0 {
		fmt.Printf("CPU-bound ceiling of %s/%s: %.2f (%s CPU per request over %s's)\n",
			kinds[len(kinds)-1], kinds[0], totals[0]/last, kinds[0], kinds[len(kinds)-1])
	}
}
