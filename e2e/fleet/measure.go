package fleet

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ResidentMemory returns the resident set size in bytes of every running
// process of the fleet, by "<cluster>/<binary>".
func (f *Fleet) ResidentMemory() (map[string]int64, error) {
	return perProcess(f, ProcessResidentBytes)
}

// perProcess reads one measure of every running process of the fleet, by
// "<cluster>/<binary>".
func perProcess[T any](f *Fleet, read func(pid int) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	for name, pid := range f.Processes() {
		v, err := read(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// ProcessResidentBytes is VmRSS of /proc/<pid>/status, in bytes.
func ProcessResidentBytes(pid int) (int64, error) {
	file, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// CPUTime returns the CPU time (user and system) every running process of
// the fleet has used so far, by "<cluster>/<binary>": two readings apart
// tell where a window's CPU went.
func (f *Fleet) CPUTime() (map[string]time.Duration, error) {
	return perProcess(f, ProcessCPUTime)
}

// ProcessCPUTime is utime + stime of /proc/<pid>/stat, counted in clock
// ticks of 100 Hz (USER_HZ on Linux).
func ProcessCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields count from after its ")".
	end := strings.LastIndexByte(string(data), ')')
	if end < 0 || end+2 > len(data) {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[end+2:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
