// Package throttle paces evictions: a token bucket at the eviction rate
// (burst 1, golang.org/x/time/rate), and storm protection — when more than a
// threshold share of members is unhealthy at once, the hub is more likely
// partitioned from the fleet than the fleet dead, so evictions go at a much
// lower secondary rate, or stop when that rate is 0. Every decision takes the
// time explicitly, so a test drives it with a fake clock.
package throttle

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Mode is how fast evictions may go.
type Mode int

const (
	// Normal: at the primary rate.
	Normal Mode = iota
	// Slowed: a storm; at the secondary rate.
	Slowed
	// Stopped: a storm and a secondary rate of 0; no evictions.
	Stopped
)

func (m Mode) String() string { return [...]string{"Normal", "Slowed", "Stopped"}[m] }

// Config are the pacing flags.
type Config struct {
	// Rate is evictions per second in normal times; 0 or less means no limit.
	Rate float64
	// SecondaryRate is evictions per second during a storm; 0 stops them.
	SecondaryRate float64
	// UnhealthyThreshold is the share of unhealthy members (0..1) above which
	// a storm is declared.
	UnhealthyThreshold float64
}

// Defaults of Config.
const (
	DefaultRate               = 0.5
	DefaultSecondaryRate      = 0.1
	DefaultUnhealthyThreshold = 0.55
)

// Fleet is the members' health at one moment.
type Fleet struct {
	Unhealthy, Total int
}

// ModeOf is the mode for a fleet: Slowed or Stopped when more than the
// threshold share of members is unhealthy.
func (c Config) ModeOf(f Fleet) Mode {
	if f.Total == 0 || float64(f.Unhealthy)/float64(f.Total) <= c.UnhealthyThreshold {
		return Normal
	}
	if c.SecondaryRate <= 0 {
		return Stopped
	}
	return Slowed
}

// Describe says in words why evictions go as they do, for events and conditions.
func (c Config) Describe(f Fleet) string {
	switch c.ModeOf(f) {
	case Slowed:
		return fmt.Sprintf("%d of %d members are unhealthy, more than %s: evicting at %g/s instead of %s",
			f.Unhealthy, f.Total, percent(c.UnhealthyThreshold), c.SecondaryRate, rateString(c.Rate))
	case Stopped:
		return fmt.Sprintf("%d of %d members are unhealthy, more than %s: evictions are stopped until fewer are",
			f.Unhealthy, f.Total, percent(c.UnhealthyThreshold))
	}
	return fmt.Sprintf("%d of %d members are unhealthy: evicting at %s", f.Unhealthy, f.Total, rateString(c.Rate))
}

func percent(f float64) string { return fmt.Sprintf("%g%%", math.Round(f*1000)/10) }

func rateString(r float64) string {
	if r <= 0 {
		return "no limit"
	}
	return fmt.Sprintf("%g/s", r)
}

// Throttle hands out eviction slots one at a time. It is safe for
// concurrent use.
type Throttle struct {
	cfg     Config
	mu      sync.Mutex
	limiter *rate.Limiter
	mode    Mode
}

// New returns a Throttle in Normal mode whose first slot is free.
func New(cfg Config) *Throttle {
	return &Throttle{cfg: cfg, limiter: rate.NewLimiter(limitOf(cfg.Rate), 1)}
}

// Config returns the throttle's configuration.
func (t *Throttle) Config() Config { return t.cfg }

// Reserve takes the next eviction slot at now for the fleet's mode: the
// eviction may go after the returned wait. ok is false when evictions are
// stopped (no slot is taken).
func (t *Throttle) Reserve(now time.Time, f Fleet) (wait time.Duration, mode Mode, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mode = t.cfg.ModeOf(f)
	if mode != t.mode {
		switch mode {
		case Normal:
			t.limiter.SetLimitAt(now, limitOf(t.cfg.Rate))
		case Slowed:
			t.limiter.SetLimitAt(now, limitOf(t.cfg.SecondaryRate))
		}
		t.mode = mode
	}
	if mode == Stopped {
		return 0, mode, false
	}
	r := t.limiter.ReserveN(now, 1)
	return r.DelayFrom(now), mode, true
}

func limitOf(r float64) rate.Limit {
	if r <= 0 {
		return rate.Inf
	}
	return rate.Limit(r)
}
