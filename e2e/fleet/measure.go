package fleet

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ResidentMemory returns the resident set size in bytes of every running
// process of the fleet, by "<cluster>/<binary>".
func (f *Fleet) ResidentMemory() (map[string]int64, error) {
	out := map[string]int64{}
	for name, pid := range f.Processes() {
		rss, err := residentBytes(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = rss
	}
	return out, nil
}

func residentBytes(pid int) (int64, error) {
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
