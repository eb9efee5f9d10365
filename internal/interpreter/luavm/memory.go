package luavm

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// The heap figures the watchdog reads. heap counts every allocated object,
// garbage not yet swept included (runtime.MemStats.HeapAlloc); live is what
// the last completed GC cycle found reachable.
const (
	metricHeap   = "/memory/classes/heap/objects:bytes"
	metricLive   = "/gc/heap/live:bytes"
	metricCycles = "/gc/cycles/total:gc-cycles"
)

type heapSample struct{ heap, live, cycles uint64 }

func readHeap() heapSample {
	s := [3]metrics.Sample{{Name: metricHeap}, {Name: metricLive}, {Name: metricCycles}}
	metrics.Read(s[:])
	var h heapSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		h.heap = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		h.live = s[1].Value.Uint64()
	}
	if s[2].Value.Kind() == metrics.KindUint64 {
		h.cycles = s[2].Value.Uint64()
	}
	return h
}

// gcMu makes concurrent watchdogs share one forced GC.
var gcMu sync.Mutex

// collect runs a GC unless one completed after the caller's sample.
func collect(seen heapSample) heapSample {
	gcMu.Lock()
	defer gcMu.Unlock()
	if now := readHeap(); now.cycles > seen.cycles {
		return now
	}
	runtime.GC()
	return readHeap()
}

// watchMemory stops the call, through stop, when the live heap has grown by
// more than MaxMemory since the call began. It samples every
// MemoryCheckInterval until ctx ends or the returned func is called.
//
// The call is charged with the live heap (as the GC measures it) above the
// whole heap at its start, garbage included, so that garbage left by others
// is never blamed on it. When the heap has grown by more than the limit but
// no GC has measured it yet, the watchdog forces one, at most once per half
// limit of further growth, to tell retained memory from garbage.
func (vm *VM) watchMemory(ctx context.Context, stop context.CancelCauseFunc) func() {
	limit := vm.limits.MaxMemory
	base := readHeap()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(vm.limits.MemoryCheckInterval)
		defer t.Stop()
		forcedAt := base.heap
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s := readHeap()
			if s.heap > base.heap+limit && s.heap > forcedAt+limit/2 && s.live <= base.heap+limit {
				s = collect(s)
				forcedAt = s.heap
			}
			if s.live > base.heap+limit {
				stop(fmt.Errorf("%w of %s (the live heap grew by %s during the call)",
					ErrMemoryLimit, bytesString(limit), bytesString(s.live-base.heap)))
				return
			}
		}
	}()
	return func() { close(done) }
}

func bytesString(n uint64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
