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
		{"not counted yet: stopped, unknown is not healthy", cfg, Fleet{}, Stopped},
		{"no members", cfg, Unpaced, Normal},
		{"1 of 4 unhealthy", cfg, Fleet{Unhealthy: 1, Total: 4, Counted: true}, Normal},
		{"2 of 4 (50%) is not more than 55%", cfg, Fleet{Unhealthy: 2, Total: 4, Counted: true}, Normal},
		{"3 of 4 (75%): slowed", cfg, Fleet{Unhealthy: 3, Total: 4, Counted: true}, Slowed},
		{"3 of 4 with secondary rate 0: stopped", stop, Fleet{Unhealthy: 3, Total: 4, Counted: true}, Stopped},
		{"11 of 20 (55%) is not more than 55%", cfg, Fleet{Unhealthy: 11, Total: 20, Counted: true}, Normal},
		{"12 of 20 (60%): slowed", cfg, Fleet{Unhealthy: 12, Total: 20, Counted: true}, Slowed},
		{"all of 1: full disruption, stopped", cfg, Fleet{Unhealthy: 1, Total: 1, Counted: true}, Stopped},
		{"all of 4: full disruption, stopped although the secondary rate is not 0", cfg, Fleet{Unhealthy: 4, Total: 4, Counted: true}, Stopped},
		{"3 of 4: slowed, not stopped", cfg, Fleet{Unhealthy: 3, Total: 4, Counted: true}, Slowed},
		{"all of 4 with no storm threshold (failback's 1): still stopped", Config{Rate: 0.5, UnhealthyThreshold: 1}, Fleet{Unhealthy: 4, Total: 4, Counted: true}, Stopped},
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
	healthy := func(int) Fleet { return Fleet{Unhealthy: 1, Total: 4, Counted: true} }
	storm := func(int) Fleet { return Fleet{Unhealthy: 3, Total: 4, Counted: true} }
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
					return Fleet{Unhealthy: 1, Total: 4, Counted: true}
				}
				return Fleet{Unhealthy: 3, Total: 4, Counted: true}
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
	f := Fleet{Unhealthy: 0, Total: 3, Counted: true}
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
	if got, want := cfg.Describe(Fleet{Unhealthy: 3, Total: 4, Counted: true}), "3 of 4 members are unhealthy, more than 55%: evicting at 0.1/s instead of 0.5/s"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	cfg.SecondaryRate = 0
	if got, want := cfg.Describe(Fleet{Unhealthy: 3, Total: 4, Counted: true}), "3 of 4 members are unhealthy, more than 55%: evictions are stopped until fewer are"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestDescribeSaysWhyNothingIsEvicted(t *testing.T) {
	cfg := Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}
	if got, want := cfg.Describe(Fleet{}), "the members' health is not counted yet: no eviction until it is"; got != want {
		t.Errorf("Describe(not counted) = %q, want %q", got, want)
	}
	if got := cfg.Describe(Fleet{Unhealthy: 3, Total: 3, Counted: true}); got != "all 3 members are unhealthy (full disruption): no eviction until one is healthy, since there is nowhere healthy to move to and the hub is more likely cut off than the whole fleet down" {
		t.Errorf("Describe(all unhealthy) = %q", got)
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	ok := Config{Rate: DefaultRate, SecondaryRate: DefaultSecondaryRate, UnhealthyThreshold: DefaultUnhealthyThreshold}
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"negative rate", func(c *Config) { c.Rate = -1 }, "--resource-eviction-rate must be 0 (no limit) or more, got -1"},
		{"negative secondary rate", func(c *Config) { c.SecondaryRate = -0.1 }, "--secondary-resource-eviction-rate must be 0 (stop evictions during a storm) or more, got -0.1"},
		{"secondary faster than primary", func(c *Config) { c.SecondaryRate = 2 }, "--secondary-resource-eviction-rate (2/s) must not be faster than --resource-eviction-rate (0.5/s): it is the pace during a storm"},
		{"threshold 0", func(c *Config) { c.UnhealthyThreshold = 0 }, "--unhealthy-cluster-threshold must be a share between 0 and 1 (exclusive), got 0"},
		{"threshold 1", func(c *Config) { c.UnhealthyThreshold = 1 }, "--unhealthy-cluster-threshold must be a share between 0 and 1 (exclusive), got 1"},
		{"threshold 55 (a percentage)", func(c *Config) { c.UnhealthyThreshold = 55 }, "--unhealthy-cluster-threshold must be a share between 0 and 1 (exclusive), got 55"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mut(&c)
			if err := c.Validate(); err == nil || err.Error() != tt.want {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAFullDisruptionEndingSettlesBeforeEvicting(t *testing.T) {
	cfg := Config{Rate: 1, SecondaryRate: 0.5, UnhealthyThreshold: 0.55}
	f := Fleet{Unhealthy: 2, Total: 3, Counted: true, SettlingUntil: t0.Add(time.Minute)}
	if got := cfg.ModeAt(f, t0.Add(30*time.Second)); got != Stopped {
		t.Errorf("within the settle period: %s, want Stopped", got)
	}
	if got := cfg.DescribeAt(f, t0.Add(30*time.Second)); got != "every member was unhealthy until moments ago (full disruption): no eviction until 2026-03-01T10:01:00Z, so that members coming back have the time to report it" {
		t.Errorf("DescribeAt = %q", got)
	}
	if got := cfg.ModeAt(f, t0.Add(time.Minute+time.Second)); got != Slowed {
		t.Errorf("after the settle period, 2 of 3 unhealthy: %s, want Slowed", got)
	}
	th := New(cfg)
	if _, _, ok := th.Reserve(t0.Add(30*time.Second), f); ok {
		t.Error("a slot was handed out within the settle period")
	}
	if _, _, ok := th.Reserve(t0.Add(2*time.Minute), f); !ok {
		t.Error("no slot after the settle period")
	}
}
