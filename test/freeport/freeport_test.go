package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Every port handed out is free, below the ephemeral range, and handed out
// once, even while the ports handed out before are still unbound.
func TestFreePortsAreBelowTheEphemeralRangeAndNeverHandedOutTwice(t *testing.T) {
	low, err := ephemeralLow()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 50 {
		ports, err := Loopback(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p < lowestPort || p >= low {
				t.Errorf("port %d is outside [%d, %d)", p, lowestPort, low)
			}
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
	// A port in use is not handed out: hold many and ask again.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for p := range seen {
		handedOut.Lock()
		delete(handedOut.ports, p)
		handedOut.Unlock()
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d handed out as free but in use: %v", p, err)
		}
		held = append(held, l)
	}
	for range 50 {
		ports, err := Loopback(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Errorf("port %d, held by a listener, handed out", p)
			}
		}
	}
}
