// Package removal paces the removal of Flotilla-managed objects from a
// member: a policy narrowed by mistake, a hub namespace deleted, a burst of
// template deletions would otherwise delete a large part of a member's
// workloads at once. Within any window, at most a share of a member's Works
// (never fewer than a burst) may be removed; the rest wait their turn, and
// the limiter remembers what made them wait so that the caller can say so.
//
// The package is pure: the binding controller asks before deleting a Work
// (controllers/binding) and reports what waits on the MemberCluster.
package removal

import (
	"slices"
	"sync"
	"time"
)

// Limiter is safe for concurrent use.
type Limiter struct {
	// Share of a member's Works that may be removed within Window.
	Share float64
	// Burst is removals always allowed within Window, whatever the share
	// (small members are not paced one Work at a time).
	Burst int
	// Window is the span over which removals are counted.
	Window time.Duration

	mu      sync.Mutex
	members map[string]*member
}

type member struct {
	removed []time.Time // in the current window, oldest first
	// size is the member's Works when this burst of removals started (the
	// most seen since): the pace is a share of it, so that a burst of
	// removals goes in a bounded number of windows, not geometrically as
	// a share of what is left would.
	size int
	// waiting maps each Work refused a slot to what asked for its removal.
	waiting map[string]string
}

// Decision is the answer to one request to remove a Work.
type Decision struct {
	// Allowed: remove it now (the removal is counted).
	Allowed bool
	// RetryAfter is when to ask again, when not allowed.
	RetryAfter time.Duration
	// Limit is how many removals the window allows on the member.
	Limit int
	// Started: this refusal started pacing on the member (nothing waited
	// before); Ended: this removal was the last one waiting.
	Started, Ended bool
}

// Take asks to remove work (a key unique on the member) from member, which
// holds live Works that are not being removed; trigger says what asks for
// the removal, for reports.
func (l *Limiter) Take(memberName, work, trigger string, live int, now time.Time) Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.members == nil {
		l.members = map[string]*member{}
	}
	m := l.members[memberName]
	if m == nil {
		m = &member{waiting: map[string]string{}}
		l.members[memberName] = m
	}
	cut := now.Add(-l.Window)
	m.removed = slices.DeleteFunc(m.removed, func(t time.Time) bool { return !t.After(cut) })
	// The member's size before this window's removals, and before the
	// burst's earlier windows: the member is forgotten when idle, so a
	// burst starts with a fresh size.
	m.size = max(m.size, live+len(m.removed))
	limit := max(l.Burst, int(l.Share*float64(m.size)))
	if len(m.removed) < limit {
		m.removed = append(m.removed, now)
		_, waited := m.waiting[work]
		delete(m.waiting, work)
		d := Decision{Allowed: true, Limit: limit, Ended: waited && len(m.waiting) == 0}
		l.forgetIdle(memberName, m)
		return d
	}
	started := len(m.waiting) == 0
	m.waiting[work] = trigger
	return Decision{RetryAfter: m.removed[0].Add(l.Window).Sub(now), Limit: limit, Started: started}
}

// Forget drops a Work that no longer waits (it was removed by other means,
// or is wanted again); it reports whether pacing of the member ended.
func (l *Limiter) Forget(memberName, work string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.members[memberName]
	if m == nil {
		return false
	}
	if _, ok := m.waiting[work]; !ok {
		return false
	}
	delete(m.waiting, work)
	ended := len(m.waiting) == 0
	l.forgetIdle(memberName, m)
	return ended
}

// Waiting is how many Works wait on member, and the distinct triggers
// (sorted) that asked for their removal.
func (l *Limiter) Waiting(memberName string) (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.members[memberName]
	if m == nil {
		return 0, nil
	}
	seen := map[string]bool{}
	var triggers []string
	for _, t := range m.waiting {
		if !seen[t] {
			seen[t] = true
			triggers = append(triggers, t)
		}
	}
	slices.Sort(triggers)
	return len(m.waiting), triggers
}

// forgetIdle drops a member with nothing counted or waiting; l.mu is held.
func (l *Limiter) forgetIdle(name string, m *member) {
	if len(m.waiting) == 0 && len(m.removed) == 0 {
		delete(l.members, name)
	}
}

// Resume carries pacing over from a previous process: a new leader whose
// predecessor was pacing removals on member (its RemovalsPaced condition
// says so) does not know what that one removed in its last window, so it
// counts the window as used up from now. Removals are then never faster
// than the share, at the cost of one window's wait. It does nothing for a
// member this process is pacing (something waits, or was removed within
// the window), and reports whether it resumed.
func (l *Limiter) Resume(memberName string, live int, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.members == nil {
		l.members = map[string]*member{}
	}
	if m := l.members[memberName]; m != nil && (len(m.waiting) > 0 || (len(m.removed) > 0 && m.removed[len(m.removed)-1].After(now.Add(-l.Window)))) {
		return false // this process paces it
	}
	if l.Share >= 1 {
		return false // a window can never be used up
	}
	// The fewest removals that use the window up, counted as Take counts
	// the limit: against the member's size before them.
	used := max(l.Burst, int(l.Share*float64(live)))
	for used < max(l.Burst, int(l.Share*float64(live+used))) {
		used++
	}
	m := &member{waiting: map[string]string{}, removed: make([]time.Time, used)}
	for i := range m.removed {
		m.removed[i] = now
	}
	l.members[memberName] = m
	return true
}
