// Package workmemo remembers what a controller derives from each Work's
// spec — the objects it carries, what it needs of a member's identity — by
// Work UID and generation, so that a pass over every Work of a member
// decodes only the Works that are new or changed since the last pass. At
// 10,000 Works per member, decoding them all on each pass was the largest
// cost of the passes that need them (a removal, the agent's grant).
package workmemo

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Memo is safe for concurrent use; its zero value is empty.
type Memo[V any] struct {
	mu     sync.Mutex
	groups map[string]map[types.UID]entry[V]
}

type entry[V any] struct {
	generation int64
	value      V
}

// Each calls fn with each of works and what derive makes of it. derive is
// called only for a Work the group does not remember at its generation,
// and what it returns is remembered unless keep is false (a value that may
// change without a new generation of the Work). works must be all of the
// group's Works (a member's): those not among them are forgotten.
func (m *Memo[V]) Each(group string, works []workv1alpha1.Work, derive func(*workv1alpha1.Work) (value V, keep bool), fn func(*workv1alpha1.Work, V)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	previous := m.groups[group]
	current := make(map[types.UID]entry[V], len(works))
	for i := range works {
		w := &works[i]
		e, ok := previous[w.UID]
		if !ok || e.generation != w.Generation {
			value, keep := derive(w)
			e = entry[V]{generation: w.Generation, value: value}
			if !keep {
				fn(w, value)
				continue
			}
		}
		current[w.UID] = e
		fn(w, e.value)
	}
	if len(current) == 0 {
		delete(m.groups, group)
		return
	}
	if m.groups == nil {
		m.groups = map[string]map[types.UID]entry[V]{}
	}
	m.groups[group] = current
}

// Len is how many Works of group are remembered.
func (m *Memo[V]) Len(group string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.groups[group])
}
