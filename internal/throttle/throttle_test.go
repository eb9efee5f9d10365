package throttle

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestStormDecision(t *testing.T) {
	cfg := Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}
	stop := cfg
	stop.SecondaryRate = 0
	tests := []struct {
		name string
		cfg  Config
		f    Fleet
		want Mode
	}{
		{"no members", cfg, Fleet{}, Normal},
		{"1 of 4 unhealthy", cfg, Fleet{1, 4}, Normal},
		{"2 of 4 (50%) is not more than 55%", cfg, Fleet{2, 4}, Normal},
		{"3 of 4 (75%): slowed", cfg, Fleet{3, 4}, Slowed},
		{"3 of 4 with secondary rate 0: stopped", stop, Fleet{3, 4}, Stopped},
		{"11 of 20 (55%) is not more than 55%", cfg, Fleet{11, 20}, Normal},
		{"12 of 20 (60%): slowed", cfg, Fleet{12, 20}, Slowed},
		{"all of 1: slowed", cfg, Fleet{1, 1}, Slowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.ModeOf(tt.f); got != tt.want {
				t.Errorf("ModeOf(%+v) = %s, want %s", tt.f, got, tt.want)
			}
		})
	}
}

// slots reserves n slots back to back, each taken when the previous one's
// wait is over, and returns when each eviction goes, relative to t0.
func slots(th *Throttle, n int, f func(i int) Fleet) []time.Duration {
	now := t0
	var out []time.Duration
	for i := range n {
		wait, _, ok := th.Reserve(now, f(i))
		if !ok {
			out = append(out, -1)
			continue
		}
		now = now.Add(wait)
		out = append(out, now.Sub(t0))
	}
	return out
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestThrottlePacesEvictionsAtTheRate(t *testing.T) {
	s := time.Second
	healthy := func(int) Fleet { return Fleet{1, 4} }
	storm := func(int) Fleet { return Fleet{3, 4} }
	tests := []struct {
		name  string
		cfg   Config
		fleet func(int) Fleet
		n     int
		want  []time.Duration
	}{
		{"0.5/s: the first at once, then every 2s", Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}, healthy, 4,
			[]time.Duration{0, 2 * s, 4 * s, 6 * s}},
		{"storm: every 10s at 0.1/s", Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}, storm, 3,
			[]time.Duration{0, 10 * s, 20 * s}},
		{"storm with secondary rate 0: none", Config{Rate: 0.5, SecondaryRate: 0, UnhealthyThreshold: 0.55}, storm, 2,
			[]time.Duration{-1, -1}},
		{"rate 0: no limit", Config{Rate: 0, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}, healthy, 3,
			[]time.Duration{0, 0, 0}},
		{"a storm starting after two evictions slows the rest", Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55},
			func(i int) Fleet {
				if i < 2 {
					return Fleet{1, 4}
				}
				return Fleet{3, 4}
			}, 4,
			// the third slot was reserved at 2s while the bucket refilled at
			// 0.5/s: the slower rate applies from then on.
			[]time.Duration{0, 2 * s, 12 * s, 22 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slots(New(tt.cfg), tt.n, tt.fleet); !equal(got, tt.want) {
				t.Errorf("evictions at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestThrottleRefillsWhileIdleButNeverBursts(t *testing.T) {
	th := New(Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55})
	f := Fleet{0, 3}
	if wait, _, _ := th.Reserve(t0, f); wait != 0 {
		t.Fatalf("first wait %s, want 0", wait)
	}
	// An hour idle: one slot at once, the next 2s later, not a burst of 1800.
	later := t0.Add(time.Hour)
	w1, _, _ := th.Reserve(later, f)
	w2, _, _ := th.Reserve(later, f)
	if w1 != 0 || w2 != 2*time.Second {
		t.Errorf("waits after idling %s, %s; want 0s, 2s", w1, w2)
	}
}

func TestDescribeSaysWhy(t *testing.T) {
	cfg := Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}
	if got, want := cfg.Describe(Fleet{3, 4}), "3 of 4 members are unhealthy, more than 55%: evicting at 0.1/s instead of 0.5/s"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	cfg.SecondaryRate = 0
	if got, want := cfg.Describe(Fleet{3, 4}), "3 of 4 members are unhealthy, more than 55%: evictions are stopped until fewer are"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
