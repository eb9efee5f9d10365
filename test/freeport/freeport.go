// Package freeport chooses loopback ports for the processes tests start
// (apiservers, etcd, managers), which bind them a moment later.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Test processes listen on ports chosen here and bound by them a moment
// later. A port taken from the kernel's ephemeral range (listen on
// :0, close, hand out) can be taken in that moment as the source port of
// any outgoing connection on the machine — an apiserver's to its etcd, a
// test's to an apiserver — and the process then exits at start with
// "address already in use". Ports are chosen below the ephemeral range
// instead, where connections never take their source port, and never twice
// by this process.
const lowestPort = 10000

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Loopback returns n distinct loopback ports that are free now, below the
// ephemeral range and not handed out before by this process.
func Loopback(n int) ([]int, error) {
	low, err := ephemeralLow()
	if err != nil {
		return nil, err
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("find %d free ports in [%d, %d): only %v after %d tries", n, lowestPort, low, ports, tries)
		}
		p := lowestPort + rand.IntN(low-lowestPort)
		if handedOut.ports[p] || !isFree(p) {
			continue
		}
		handedOut.ports[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

func isFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// net.ipv4.ip_local_port_range; 32768, its default, where that cannot be
// read).
func ephemeralLow() (int, error) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if errors.Is(err, os.ErrNotExist) {
		return 32768, nil
	} else if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return 0, fmt.Errorf("ip_local_port_range reads %q", raw)
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, fmt.Errorf("ip_local_port_range reads %q: %w", raw, err)
	}
	if low <= lowestPort+1000 {
		return 0, fmt.Errorf("the ephemeral port range starts at %d: too low to choose test ports below it (from %d)", low, lowestPort)
	}
	return low, nil
}
