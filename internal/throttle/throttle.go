// Package throttle paces evictions: a token bucket at the eviction rate
// (burst 1, golang.org/x/time/rate), and storm protection — when more than a
// threshold share of members is unhealthy at once, the hub is more likely
// partitioned from the fleet than the fleet dead, so evictions go at a much
// lower secondary rate, or stop when that rate is 0. When every member is
// unhealthy (full disruption) nothing is evicted at all, whatever the rates:
// there is nowhere healthy to move to, and the likeliest cause is the hub's
// own link — the rule of the Kubernetes node lifecycle controller when all
// zones are fully disrupted. Before the fleet's health is counted, nothing is
// evicted either: unknown is not healthy. Every decision takes the time
// explicitly, so a test drives it with a fake clock.
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

// Config are the pacing flags; Validate them before use.
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

// Validate refuses values that would make pacing meaningless, naming the flag.
func (c Config) Validate() error {
	switch {
	case c.Rate < 0:
		return fmt.Errorf("--resource-eviction-rate must be 0 (no limit) or more, got %g", c.Rate)
	case c.SecondaryRate < 0:
		return fmt.Errorf("--secondary-resource-eviction-rate must be 0 (stop evictions during a storm) or more, got %g", c.SecondaryRate)
	case c.Rate > 0 && c.SecondaryRate > c.Rate:
		return fmt.Errorf("--secondary-resource-eviction-rate (%g/s) must not be faster than --resource-eviction-rate (%g/s): it is the pace during a storm", c.SecondaryRate, c.Rate)
	case !(c.UnhealthyThreshold > 0 && c.UnhealthyThreshold < 1):
		return fmt.Errorf("--unhealthy-cluster-threshold must be a share between 0 and 1 (exclusive), got %g", c.UnhealthyThreshold)
	}
	return nil
}

// Fleet is the members' health at one moment.
type Fleet struct {
	Unhealthy, Total int
	// Counted is false until the members' health has been counted once: an
	// unknown fleet is not a healthy one.
	Counted bool
	// SettlingUntil, when in the future, is the end of the settle period
	// after a full disruption: members come back one by one, and one still
	// tainted from the disruption is not evicted before it had the time to
	// report back (like the node lifecycle controller, which lifts its
	// NoExecute taints in a full disruption so that the clock starts again).
	SettlingUntil time.Time
}

// Unpaced is the Fleet of a queue without storm protection (failback): no
// member counts.
var Unpaced = Fleet{Counted: true}

// ModeOf is the mode for a fleet: Stopped before the fleet is counted and
// when every member is unhealthy; Slowed, or Stopped when the secondary
// rate is 0, when more than the threshold share is.
func (c Config) ModeOf(f Fleet) Mode { return c.modeAt(f, time.Time{}) }

// modeAt is ModeOf at now; a zero now ignores the settle period.
func (c Config) modeAt(f Fleet, now time.Time) Mode {
	switch {
	case !f.Counted, f.Total > 0 && f.Unhealthy >= f.Total, !now.IsZero() && now.Before(f.SettlingUntil):
		return Stopped
	case f.Total == 0 || float64(f.Unhealthy)/float64(f.Total) <= c.UnhealthyThreshold:
		return Normal
	case c.SecondaryRate <= 0:
		return Stopped
	}
	return Slowed
}

// ModeAt is the mode at now, counting the settle period after a full disruption.
func (c Config) ModeAt(f Fleet, now time.Time) Mode { return c.modeAt(f, now) }

// DescribeAt says in words why evictions go as they do at now, for events
// and conditions.
func (c Config) DescribeAt(f Fleet, now time.Time) string {
	if c.modeAt(f, now) == Stopped && f.Counted && !(f.Total > 0 && f.Unhealthy >= f.Total) && now.Before(f.SettlingUntil) {
		return fmt.Sprintf("every member was unhealthy until moments ago (full disruption): no eviction until %s, so that members coming back have the time to report it",
			f.SettlingUntil.UTC().Format(time.RFC3339))
	}
	return c.Describe(f)
}

// Describe says in words why evictions go as they do, for events and conditions.
func (c Config) Describe(f Fleet) string {
	switch {
	case !f.Counted:
		return "the members' health is not counted yet: no eviction until it is"
	case f.Total > 0 && f.Unhealthy >= f.Total:
		return fmt.Sprintf("all %d members are unhealthy (full disruption): no eviction until one is healthy, since there is nowhere healthy to move to and the hub is more likely cut off than the whole fleet down", f.Total)
	}
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
	mode = t.cfg.modeAt(f, now)
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
