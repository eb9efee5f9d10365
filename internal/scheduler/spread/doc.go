// Package spread chooses members under spread constraints. It sees
// candidates (name, score, capacity) and, through a callback, which group of
// each constraint a candidate belongs to; it knows nothing of plugins or the
// API, so it is tested with plain structs.
//
// Selection, constraint by constraint:
//  0. Without constraints every candidate is selected, in the order given.
//  1. Candidates are ranked by score (high first), capacity (high first), then
//     the order given (by name).
//  2. A candidate without a group for some constraint (no such label, no
//     region...) is excluded, with the reason.
//  3. Each group constraint (region, zone, provider, label), in the order
//     given, groups the remaining candidates. Fewer groups than minGroups
//     fails NoFit naming the constraint. Otherwise the best maxGroups groups
//     are kept (all when maxGroups is 0), ranked by their best candidate, then
//     capacity, then value. When replicas are divided (Need > 0) and the kept
//     groups cannot hold them, the largest groups by capacity are kept instead;
//     if even those cannot, it fails Insufficient naming the constraint.
//  4. Members are picked up to the cluster constraint's maxGroups: first those
//     that cover groups still short of a constraint's minGroups, then by rank;
//     the covering picks are Mandatory (Aggregated must keep them). The same
//     capacity fallback applies.
package spread
