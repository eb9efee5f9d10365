package scheduler

import (
	"fmt"
	"strings"
)

// namesPerReason bounds the member names listed for one reason.
const namesPerReason = 3

// unfitSummary says concisely why no member of term outcome o is usable:
// members grouped by reason, in name order, e.g.
// "0/4 members fit: m1: not Ready (Ready=False); m2, m3: untolerated taint k:NoExecute".
func (d *decision) unfitSummary(o *termOutcome) string {
	type group struct {
		reason string
		names  []string
		count  int
	}
	var groups []*group
	byReason := map[string]*group{}
	usable := 0
	for i := range d.snap.Len() {
		_, reason := d.statusOf(o, i)
		if reason == "" {
			usable++
			continue
		}
		g := byReason[reason]
		if g == nil {
			g = &group{reason: reason}
			byReason[reason] = g
			groups = append(groups, g)
		}
		g.count++
		if len(g.names) < namesPerReason {
			g.names = append(g.names, d.snap.Member(i).Name)
		}
	}
	if d.snap.Len() == 0 {
		return "0/0 members fit: the fleet has no members"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d members fit", usable, d.snap.Len())
	for i, g := range groups {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(g.names, ", "))
		if more := g.count - len(g.names); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		b.WriteString(": ")
		b.WriteString(g.reason)
	}
	return b.String()
}
