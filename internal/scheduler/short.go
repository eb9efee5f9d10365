package scheduler

import (
	"fmt"
	"strings"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// ShortMember is a member a placement asked for and could not have: the
// affinity term in force selects it and it passes every filter but for
// capacity (a Duplicated binding whose replicas do not all fit there).
type ShortMember struct {
	Name string
	// Reason is the capacity filter's, e.g. "insufficient capacity: 1 of 2 replicas fit".
	Reason string
}

// shortMembers lists, sorted by name, the members a successful Duplicated
// placement left out for capacity alone. A spread constraint whose
// maxGroups the selection already reaches would have left them out anyway:
// then nothing is short.
func (d *decision) shortMembers(o *termOutcome) []ShortMember {
	if d.cycle.Strategy != framework.Duplicated || d.cycle.Replicas == 0 || o.err != nil || d.quotaRefused {
		return nil
	}
	var out []ShortMember
	for i := range d.snap.Len() {
		if o.affinityReason[i] == "" && d.base[i].code == framework.Insufficient {
			out = append(out, ShortMember{Name: d.snap.Member(i).Name, Reason: d.base[i].reason})
		}
	}
	if len(out) == 0 || d.spreadAtMaximum(o) {
		return nil
	}
	return out
}

// spreadAtMaximum reports whether the selection holds as many groups as
// some spread constraint's maxGroups allows.
func (d *decision) spreadAtMaximum(o *termOutcome) bool {
	for k, c := range d.constraints {
		if c.MaxGroups <= 0 {
			continue
		}
		groups := map[string]struct{}{}
		for _, i := range o.selected {
			m := d.snap.Member(i)
			if c.ByMember {
				groups[m.Name] = struct{}{}
			} else if g, ok := d.groupKeys[k](m); ok {
				groups[g] = struct{}{}
			}
		}
		if len(groups) >= c.MaxGroups {
			return true
		}
	}
	return false
}

// ShortMessage says which members a placement is short of and why, naming
// at most maxListed, e.g. "short of member1 (insufficient capacity: 1 of 2
// replicas fit)"; "" when nothing is short.
func ShortMessage(short []ShortMember) string {
	if len(short) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("short of ")
	for i, s := range short {
		if i == maxListed {
			fmt.Fprintf(&b, ", %d more", len(short)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Name)
		b.WriteString(" (")
		b.WriteString(s.Reason)
		b.WriteByte(')')
	}
	return b.String()
}
