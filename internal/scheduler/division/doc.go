// Package division divides a replica count between members. It knows nothing
// of plugins, policies or the API: a Member is a name, a weight, a capacity
// and the replicas it holds now.
//
// Every algorithm is a highest-averages (Webster/Sainte-Laguë) apportionment.
// Seat k of a member of weight w has the priority w/(2k-1); a division of R
// replicas gives the R seats of highest priority, never more than a member's
// capacity. Equal priorities are broken by the higher weight, then the larger
// capacity (unknown counts as largest), then the member name in ascending
// order, so every result is a pure function of its input, independent of
// member order.
//
//   - Apportion divides from scratch (a full rebalance).
//   - Adjust moves as few replicas as possible: from the current division it
//     only adds the next-best seats (scale-up) or removes the worst-held seats
//     (scale-down). Because highest-averages methods are house monotone,
//     Adjust from Apportion(N) to N+1 gives Apportion(N+1), and back.
//   - Aggregate uses the fewest members that can hold the replicas, largest
//     capacity first, then divides among them by capacity.
//
// Results:
//   - 2 replicas at weights 2:1 give 1:1 (seat priorities a1=2, b1=1, a2=2/3).
//   - 7 replicas at weights 1:1:1 and equal capacity give 3:2:2 (ties go to
//     a, then b, then c).
package division
