// Package overrides renders a resource template for one member by applying
// the ClusterOverridePolicies and OverridePolicies that select it. It is pure:
// no API calls, no controller-runtime; callers pass the policies they listed.
//
// Semantics follow Karmada (policy/v1alpha1, read in karmada-io/karmada
// pkg/util/overridemanager/overridemanager.go and pkg/util/selector.go):
//
// Which policies: a policy with no resourceSelectors selects every template
// of its scope; otherwise a template must match one selector (apiVersion and
// kind; namespace when set, ClusterOverridePolicy only; then name when set,
// else labelSelector when set, else every object of the kind). An
// OverridePolicy applies only to templates of its own namespace, so never to
// cluster-scoped ones.
//
// Order, each later change applied on top of the earlier ones (so the later
// one wins where two touch the same field):
//
//  1. every matching ClusterOverridePolicy, then every matching OverridePolicy;
//  2. within one kind, by implicit priority ascending — selects-all (no
//     selectors, or a selector with neither name nor labelSelector), then
//     labelSelector, then name; a policy's priority is that of its most
//     specific selector matching the template — and then by name ascending.
//     So the most specific policy applies last and wins;
//  3. within a policy, the deprecated spec.targetCluster/spec.overriders pair
//     first, then spec.overrideRules in order; a rule applies when its
//     targetCluster (nil: every member) selects the member;
//  4. within one rule, Karmada's fixed order: imageOverrider, commandOverrider,
//     argsOverrider, labelsOverrider, annotationsOverrider, fieldOverrider,
//     plaintext — plaintext last — each list in its own order.
//
// Where this package deliberately differs from Karmada, it is stricter or
// covers more, never silently different:
//   - Karmada ignores spec.targetCluster/spec.overriders when overrideRules is
//     set (its webhook forbids both); here both apply, deprecated pair first.
//   - Errors instead of silent no-ops: an invalid selector, a Tag value that
//     is neither a tag nor a digest, an image override that yields an invalid
//     reference, a fieldOverrider with neither or both of json and yaml, an
//     add or replace without a value (Karmada writes null).
//   - Without a predicate, imageOverrider also covers initContainers and
//     CronJob; command/argsOverrider also find init containers and CronJob
//     (container names are unique across both lists of a pod).
//     Karmada covers containers of Pod, Deployment, ReplicaSet, StatefulSet,
//     DaemonSet and Job only (karmada-io/karmada#4283).
//   - command/argsOverrider on a container without command/args: add sets
//     the list, remove is a no-op (Karmada writes an empty list).
package overrides
