package capacity

// Place returns a copy of m with n replicas of r placed on it and how many
// were placed (fewer than n when m cannot hold them all).
//
// Replicas fill Nodes one at a time, group by group in model order: a group
// splits into its full Nodes, at most one partly used Node, and its untouched
// Nodes. Packing (rather than spreading) is the conservative choice for the
// capacity still left, and repeated placements of one requirement reuse the
// partly used Node instead of fragmenting the model.
func (m *Model) Place(r *Requirement, n int64) (*Model, int64) {
	if m == nil || n <= 0 {
		return m, 0
	}
	out := &Model{observedTime: m.observedTime, groups: make([]group, 0, len(m.groups)+2), boundPods: m.boundPods}
	left := n
	for i := range m.groups {
		g := m.groups[i]
		if left == 0 || !g.admits(r) {
			out.groups = append(out.groups, g)
			continue
		}
		k := perNode(g.free, r.requests)
		if k == 0 {
			out.groups = append(out.groups, g)
			continue
		}
		fullNodes := left / k
		if fullNodes >= g.count {
			// Every Node of the group takes k; none has room left for r.
			g.free = subtract(g.free, r.requests, k)
			out.groups = append(out.groups, g)
			left -= g.count * k
			continue
		}
		rest := left % k
		if fullNodes > 0 {
			out.groups = append(out.groups, group{count: fullNodes, labels: g.labels, taints: g.taints, free: subtract(g.free, r.requests, k)})
		}
		untouched := g.count - fullNodes
		if rest > 0 {
			out.groups = append(out.groups, group{count: 1, labels: g.labels, taints: g.taints, free: subtract(g.free, r.requests, rest)})
			untouched--
		}
		if untouched > 0 {
			g.count = untouched
			out.groups = append(out.groups, g)
		}
		left = 0
	}
	return out, n - left
}
