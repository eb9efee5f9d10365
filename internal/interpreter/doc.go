// Package interpreter is the one place that knows workload kinds: what
// Karmada calls the resource interpreter, with Karmada's operation names
// for familiarity, built in for the kinds below. Every other package asks
// it rather than switching on kinds itself.
//
//   - GetReplicas: a template's replica count and what one replica needs
//     (Deployment, StatefulSet, ReplicaSet: spec.replicas; Job:
//     spec.parallelism; others none, copied whole to each member);
//   - ReviseReplica: a member's share written into its copy;
//   - Pods: how many Pods an object makes in a member, for quota;
//   - Retain: the replica count another manager owns in a member stays
//     the member's;
//   - InterpretHealth: an applied object's health from its own status
//     (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, Pod, Service,
//     Ingress, PersistentVolumeClaim, PodDisruptionBudget; others Healthy
//     once applied);
//   - ReflectStatus: the part of an applied object's status the hub keeps
//     for it (picked fields for Deployment, StatefulSet, ReplicaSet,
//     DaemonSet, Service, Job, PodDisruptionBudget, HorizontalPodAutoscaler;
//     the whole status for others);
//   - AggregateStatus: the template's status folded from its members'
//     (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, Pod,
//     Service, Ingress, PersistentVolumeClaim, PersistentVolume,
//     PodDisruptionBudget, HorizontalPodAutoscaler);
//   - GetDependencies: the ConfigMaps, Secrets, ServiceAccounts and
//     PersistentVolumeClaims its Pods reference, for propagateDeps;
//   - PodSpecPath: where a kind keeps its pod spec (overriders of images,
//     commands and arguments).
//
// It is pure: it reads and writes the objects it is given.
package interpreter
