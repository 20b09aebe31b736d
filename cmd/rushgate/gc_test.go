package main

import "testing"

func TestMemoryAvailable(t *testing.T) {
	meminfo := []byte("MemTotal:       24683756 kB\nMemFree:         1000 kB\n")
	for _, tc := range []struct {
		name         string
		cgroup, info string
		want         int64
		ok           bool
	}{
		{"cgroup limit", "1073741824\n", string(meminfo), 1 << 30, true},
		{"cgroup without limit: the machine", "max\n", string(meminfo), 24683756 << 10, true},
		{"no cgroup file: the machine", "", string(meminfo), 24683756 << 10, true},
		{"nothing readable", "", "", 0, false},
		{"garbage", "lots", "MemTotal: many kB\n", 0, false},
		{"negative", "-5", "MemTotal: -5 kB\n", 0, false},
	} {
		got, ok := memoryAvailable([]byte(tc.cgroup), []byte(tc.info))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGCDefaultsLeaveTheEnvironmentsSettings(t *testing.T) {
	env := map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}
	if p, l := gcDefaults(func(k string) string { return env[k] }); p != -1 || l != -1 {
		t.Fatalf("with GOGC and GOMEMLIMIT set, gcDefaults set %d and %d", p, l)
	}
}
