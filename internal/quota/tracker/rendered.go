package tracker

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-io/flotilla/internal/quota"
)

// MemberRendering is one member's part of a binding's rendering.
type MemberRendering struct {
	Member string
	// Rendered is what the member's new Work would carry
	// (quota.ObjectsUsage of its objects).
	Rendered corev1.ResourceList
	// Kept is what the member's Work carries now (nil: it has none): what
	// the member keeps using when its new Work is refused.
	Kept corev1.ResourceList
}

// Rendering is the outcome of ChargeRendered.
type Rendering struct {
	// Charged is the binding's rendered usage now charged: quota.Fleet of
	// the admitted members' Rendered and the refused members' Kept. The
	// caller records it in the binding's status.renderedUsage.
	Charged corev1.ResourceList
	// Refused are the members whose new Work would take the namespace past
	// a quota, each with its *quota.ExceededError; their Works must stay as
	// they are.
	Refused map[string]error
}

// ChargeRendered checks what a binding's Works would carry against the
// namespace's quotas, member by member, and charges the binding with it,
// under the lock that serialises the scheduler's decisions: two bindings
// rendering at once cannot both take the last of a quota, nor a binding and
// a placement.
//
// The binding uses the larger of its placement (what the scheduler
// charged) and its rendering, key by key; only what the rendering adds
// beyond that is checked, like a placement: a member is refused when, with
// its new Work, some key of some quota grows and passes the quota's
// overall. Members whose new Work uses no more than the one they have are
// taken first and never refused; the others in the order given. A refused
// member counts with the Work it keeps.
func (t *Tracker) ChargeRendered(key, namespace string, members []MemberRendering) (Rendering, error) {
	if err := t.waitSynced(); err != nil {
		return Rendering{}, err
	}
	// Members that shrink first, then those that stay, then those that grow.
	rank := func(m MemberRendering) int {
		switch {
		case grows(m.Kept, m.Rendered):
			return 2
		case quota.Decreased(m.Kept, m.Rendered):
			return 0
		}
		return 1
	}
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return rank(members[i]) - rank(members[j]) })
	t.decide.Lock()
	defer t.decide.Unlock()
	var out Rendering
	now := t.opts.Now()
	t.change(namespace, func(s *space) effect {
		t.expireReservations(s)
		a := s.accounts[key]
		if a == nil {
			a = &account{observed: corev1.ResourceList{}}
		}
		base := a.effective()
		placed := a.observed
		if a.reserved != nil {
			placed = quota.Max(placed, a.reserved)
		}
		if a.renderedSeen != nil {
			placed = quota.Max(placed, a.renderedSeen)
		}
		parts := make([]corev1.ResourceList, len(members))
		for i, m := range members {
			parts[i] = m.Kept
		}
		for _, i := range order {
			parts[i] = members[i].Rendered
			if len(s.quotas) == 0 || !grows(members[i].Kept, members[i].Rendered) {
				continue
			}
			after := quota.Max(placed, quota.Fleet(parts...))
			if err := s.check(namespace, quota.Subtract(after, base)); err != nil {
				parts[i] = members[i].Kept
				if out.Refused == nil {
					out.Refused = map[string]error{}
				}
				out.Refused[members[i].Member] = err
			}
		}
		out.Charged = quota.Fleet(parts...)
		return s.update(key, func(a *account) {
			a.renderedHeld, a.renderedAt = out.Charged.DeepCopy(), now
		})
	})
	return out, nil
}

// grows reports whether after is more than before on some key.
func grows(before, after corev1.ResourceList) bool {
	return quota.Decreased(after, before)
}
