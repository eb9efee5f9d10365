package interpreter

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TemplateGenerationAnnotation on an object applied to a member, when
// present, is the generation of the hub's template it was rendered from.
// ReflectStatus carries it as resourceTemplateGeneration for Deployments,
// StatefulSets, ReplicaSets and DaemonSets, and AggregateStatus then counts
// a member as having observed the template's generation only once that
// value has reached it (Karmada's resourcetemplate.karmada.io/generation).
// Without it, a member counts as soon as its controller has observed its
// own object's generation.
const TemplateGenerationAnnotation = "resourcetemplate.flotilla.io/generation"

// memberGeneration is what ReflectStatus adds to a workload's status: the
// generation of the member's object and of the template it was rendered
// from, for AggregateStatus to tell whether the member's status is of the
// template's current spec.
type memberGeneration struct {
	Generation                 int64  `json:"generation,omitempty"`
	ResourceTemplateGeneration *int64 `json:"resourceTemplateGeneration,omitempty"`
}

// caughtUp is whether a member's status is of the template's generation:
// its controller observed its object's generation and, when known, that
// object was rendered from the template's generation or a later one.
func (g memberGeneration) caughtUp(observed, templateGeneration int64) bool {
	return observed >= g.Generation &&
		(g.ResourceTemplateGeneration == nil || *g.ResourceTemplateGeneration >= templateGeneration)
}

func generationsOf(obj *unstructured.Unstructured) memberGeneration {
	g := memberGeneration{Generation: obj.GetGeneration()}
	if v, found := obj.GetAnnotations()[TemplateGenerationAnnotation]; found {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			n = 0 // unreadable: never counts as caught up
		}
		g.ResourceTemplateGeneration = &n
	}
	return g
}

type memberDeploymentStatus struct {
	memberGeneration
	appsv1.DeploymentStatus
}

type memberStatefulSetStatus struct {
	memberGeneration
	appsv1.StatefulSetStatus
}

type memberReplicaSetStatus struct {
	memberGeneration
	appsv1.ReplicaSetStatus
}

type memberDaemonSetStatus struct {
	memberGeneration
	appsv1.DaemonSetStatus
}

// hpaReplicas is the part of a HorizontalPodAutoscaler's status (autoscaling
// v1 and v2 alike) the hub keeps and sums.
type hpaReplicas struct {
	CurrentReplicas int32 `json:"currentReplicas"`
	DesiredReplicas int32 `json:"desiredReplicas"`
}

// ReflectStatus returns the part of an applied object's status the hub
// keeps for it (Karmada's reflectStatus), nil when the object has no
// status:
//
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet: the replica (or node)
//     counts AggregateStatus sums and observedGeneration, with the
//     member's object's generation and TemplateGenerationAnnotation;
//   - Service: status.loadBalancer of a Service of type LoadBalancer, nil
//     for every other type;
//   - Job: active, succeeded, failed, conditions, startTime and
//     completionTime;
//   - PodDisruptionBudget: disruptionsAllowed, expectedPods,
//     desiredHealthy, currentHealthy and disruptedPods;
//   - HorizontalPodAutoscaler: currentReplicas and desiredReplicas;
//   - every other kind (Pod, PersistentVolumeClaim, Ingress, CronJob...):
//     the whole status.
func ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	status, found, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil {
		return nil, fmt.Errorf("read the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if !found {
		return nil, nil
	}
	var kept any = status
	switch groupKind(obj) {
	case deploymentKind:
		s := appsv1.DeploymentStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = memberDeploymentStatus{generationsOf(obj), appsv1.DeploymentStatus{
			ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, UpdatedReplicas: s.UpdatedReplicas,
			ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas, UnavailableReplicas: s.UnavailableReplicas,
		}}
	case statefulSetKind:
		s := appsv1.StatefulSetStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = memberStatefulSetStatus{generationsOf(obj), appsv1.StatefulSetStatus{
			ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas,
			CurrentReplicas: s.CurrentReplicas, UpdatedReplicas: s.UpdatedReplicas, AvailableReplicas: s.AvailableReplicas,
		}}
	case replicaSetKind:
		s := appsv1.ReplicaSetStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = memberReplicaSetStatus{generationsOf(obj), appsv1.ReplicaSetStatus{
			ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas,
			AvailableReplicas: s.AvailableReplicas,
		}}
	case daemonSetKind:
		s := appsv1.DaemonSetStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = memberDaemonSetStatus{generationsOf(obj), appsv1.DaemonSetStatus{
			ObservedGeneration: s.ObservedGeneration, CurrentNumberScheduled: s.CurrentNumberScheduled,
			NumberMisscheduled: s.NumberMisscheduled, DesiredNumberScheduled: s.DesiredNumberScheduled,
			NumberReady: s.NumberReady, UpdatedNumberScheduled: s.UpdatedNumberScheduled,
			NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable,
		}}
	case serviceKind:
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t != string(corev1.ServiceTypeLoadBalancer) {
			return nil, nil
		}
		s := corev1.ServiceStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = corev1.ServiceStatus{LoadBalancer: s.LoadBalancer}
	case jobKind:
		s := batchv1.JobStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = batchv1.JobStatus{Active: s.Active, Succeeded: s.Succeeded, Failed: s.Failed,
			Conditions: s.Conditions, StartTime: s.StartTime, CompletionTime: s.CompletionTime}
	case podDisruptionBudgetKind:
		s := policyv1.PodDisruptionBudgetStatus{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: s.DisruptionsAllowed, ExpectedPods: s.ExpectedPods,
			DesiredHealthy: s.DesiredHealthy, CurrentHealthy: s.CurrentHealthy, DisruptedPods: s.DisruptedPods}
	case hpaKind:
		s := hpaReplicas{}
		if err := statusFrom(obj, status, &s); err != nil {
			return nil, err
		}
		kept = s
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, fmt.Errorf("write the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

func statusFrom(obj *unstructured.Unstructured, status map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(status, into); err != nil {
		return fmt.Errorf("read the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// AggregateStatus returns a copy of the template with .status computed
// from the members' statuses as ReflectStatus kept them (Karmada's
// aggregateStatus). Members whose status is not known yet (not applied,
// or not reported) count as described per kind:
//
//   - Deployment, StatefulSet, ReplicaSet, DaemonSet: the counts
//     ReflectStatus keeps, summed; observedGeneration is the template's
//     generation once every member has reported a status of it, else left
//     as it was; the template's other status fields are kept;
//   - Job: active, succeeded and failed summed; a Failed condition once a
//     member failed (naming the members); Complete (and
//     SuccessCriteriaMet) once every member completed (met them);
//     startTime the earliest once every member started, and kept once set;
//     completionTime the latest once every member completed; a template
//     already Complete or Failed is left as it is;
//   - CronJob: active Jobs of every member, the latest lastScheduleTime
//     and lastSuccessfulTime;
//   - Pod: phase Failed if any member's is, else Pending if any member's
//     is or is not known, else Running if any member's is, else
//     Succeeded; every member's container and init container statuses
//     (ready and state);
//   - Service of type LoadBalancer, Ingress: the members' load balancer
//     ingress points, deduplicated and sorted; a Service of another type is
//     left as it is;
//   - PersistentVolumeClaim: phase Lost if any member's is, else that of a
//     member not Bound (Pending when not known), else Bound;
//   - PersistentVolume: phase the first of Failed, Pending (also when not
//     known), Available, Bound, Released that a member has;
//   - PodDisruptionBudget: currentHealthy, desiredHealthy, expectedPods and
//     disruptionsAllowed summed, disruptedPods named member/pod;
//   - HorizontalPodAutoscaler: currentReplicas and desiredReplicas summed.
//
// ok is false, and the template is returned unchanged, for every other
// kind. err says which member's status, or the template, could not be
// read; aggregated is then nil.
func AggregateStatus(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (aggregated *unstructured.Unstructured, ok bool, err error) {
	var aggregate func(*unstructured.Unstructured, []workv1alpha1.AggregatedStatusItem) (any, error)
	switch groupKind(template) {
	case deploymentKind:
		aggregate = aggregateDeployment
	case statefulSetKind:
		aggregate = aggregateStatefulSet
	case replicaSetKind:
		aggregate = aggregateReplicaSet
	case daemonSetKind:
		aggregate = aggregateDaemonSet
	case jobKind:
		aggregate = aggregateJob
	case cronJobKind:
		aggregate = aggregateCronJob
	case podKind:
		aggregate = aggregatePod
	case serviceKind:
		aggregate = aggregateService
	case ingressKind:
		aggregate = aggregateIngress
	case pvcKind:
		aggregate = aggregatePVC
	case pvKind:
		aggregate = aggregatePV
	case podDisruptionBudgetKind:
		aggregate = aggregatePDB
	case hpaKind:
		aggregate = aggregateHPA
	default:
		return template, false, nil
	}
	status, err := aggregate(template, items)
	if err != nil {
		return nil, true, err
	}
	out := template.DeepCopy()
	if status == nil { // left as it is
		return out, true, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return nil, true, fmt.Errorf("write the status of %s %s: %w", template.GetKind(), template.GetName(), err)
	}
	out.Object["status"] = m
	return out, true, nil
}

// templateStatus reads the template's current status into into.
func templateStatus(template *unstructured.Unstructured, into any) error {
	status, _, err := unstructured.NestedMap(template.Object, "status")
	if err != nil {
		return fmt.Errorf("read the status of %s %s: %w", template.GetKind(), template.GetName(), err)
	}
	return statusFrom(template, status, into)
}

// memberStatus reads a member's status into into; false when the member
// has not reported one.
func memberStatus(template *unstructured.Unstructured, item workv1alpha1.AggregatedStatusItem, into any) (bool, error) {
	if item.Status == nil || len(item.Status.Raw) == 0 || string(item.Status.Raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(item.Status.Raw, into); err != nil {
		return false, fmt.Errorf("read the status of %s %s in member %s: %w", template.GetKind(), template.GetName(), item.ClusterName, err)
	}
	return true, nil
}

// eachReportedStatus calls each with the status of every member that has
// reported one, in order: the loop every aggregate shares.
func eachReportedStatus[M any](template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem, each func(cluster string, m *M)) error {
	for _, item := range items {
		m := new(M)
		ok, err := memberStatus(template, item, m)
		if err != nil {
			return err
		}
		if ok {
			each(item.ClusterName, m)
		}
	}
	return nil
}

// sumCounts aggregates the kinds whose counts AggregateStatus sums, which
// differ only in those counts: the template's status with every count
// countsOf points at replaced by the members' sum, and observedGeneration
// the template's generation once every member has caught up with it.
// memberOf splits a member's status as ReflectStatus kept it.
func sumCounts[S, M any](template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem,
	countsOf func(*S) (observedGeneration *int64, counts []*int32), memberOf func(*M) (memberGeneration, *S)) (any, error) {
	status := new(S)
	if err := templateStatus(template, status); err != nil {
		return nil, err
	}
	observedGeneration, sums := countsOf(status)
	for _, sum := range sums {
		*sum = 0
	}
	caughtUp := 0
	err := eachReportedStatus(template, items, func(_ string, m *M) {
		generations, s := memberOf(m)
		observed, counts := countsOf(s)
		if generations.caughtUp(*observed, template.GetGeneration()) {
			caughtUp++
		}
		for i, count := range counts {
			*sums[i] += *count
		}
	})
	if err != nil {
		return nil, err
	}
	if caughtUp == len(items) {
		*observedGeneration = template.GetGeneration()
	}
	return status, nil
}

func aggregateDeployment(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	return sumCounts(template, items, func(s *appsv1.DeploymentStatus) (*int64, []*int32) {
		return &s.ObservedGeneration, []*int32{&s.Replicas, &s.UpdatedReplicas, &s.ReadyReplicas, &s.AvailableReplicas, &s.UnavailableReplicas}
	}, func(m *memberDeploymentStatus) (memberGeneration, *appsv1.DeploymentStatus) {
		return m.memberGeneration, &m.DeploymentStatus
	})
}

func aggregateStatefulSet(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	return sumCounts(template, items, func(s *appsv1.StatefulSetStatus) (*int64, []*int32) {
		return &s.ObservedGeneration, []*int32{&s.Replicas, &s.ReadyReplicas, &s.CurrentReplicas, &s.UpdatedReplicas, &s.AvailableReplicas}
	}, func(m *memberStatefulSetStatus) (memberGeneration, *appsv1.StatefulSetStatus) {
		return m.memberGeneration, &m.StatefulSetStatus
	})
}

func aggregateReplicaSet(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	return sumCounts(template, items, func(s *appsv1.ReplicaSetStatus) (*int64, []*int32) {
		return &s.ObservedGeneration, []*int32{&s.Replicas, &s.ReadyReplicas, &s.AvailableReplicas}
	}, func(m *memberReplicaSetStatus) (memberGeneration, *appsv1.ReplicaSetStatus) {
		return m.memberGeneration, &m.ReplicaSetStatus
	})
}

func aggregateDaemonSet(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	return sumCounts(template, items, func(s *appsv1.DaemonSetStatus) (*int64, []*int32) {
		return &s.ObservedGeneration, []*int32{&s.CurrentNumberScheduled, &s.NumberMisscheduled, &s.DesiredNumberScheduled,
			&s.NumberReady, &s.UpdatedNumberScheduled, &s.NumberAvailable, &s.NumberUnavailable}
	}, func(m *memberDaemonSetStatus) (memberGeneration, *appsv1.DaemonSetStatus) {
		return m.memberGeneration, &m.DaemonSetStatus
	})
}

// jobFinished is the type of the condition that says a Job finished,
// Complete or Failed, "" while it runs.
func jobFinished(s *batchv1.JobStatus) batchv1.JobConditionType {
	for _, c := range s.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// trueCondition is the first condition of the type given that is True, nil
// when there is none.
func trueCondition(s *batchv1.JobStatus, conditionType batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range s.Conditions {
		if c.Type == conditionType && c.Status == corev1.ConditionTrue {
			return &s.Conditions[i]
		}
	}
	return nil
}

// jobCondition is an aggregated Job condition: how many members have it
// True, and the latest time one of them reached it. Karmada stamps the
// time of aggregation instead; the members' own times keep the aggregated
// status the same while theirs are.
type jobCondition struct {
	batchv1.JobCondition
	members int
}

func (c *jobCondition) add(member batchv1.JobCondition) {
	c.members++
	if c.LastTransitionTime.Before(&member.LastTransitionTime) {
		c.LastTransitionTime = member.LastTransitionTime
		c.LastProbeTime = member.LastTransitionTime
	}
}

func aggregateJob(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	old := &batchv1.JobStatus{}
	if err := templateStatus(template, old); err != nil {
		return nil, err
	}
	if jobFinished(old) != "" {
		return nil, nil // final
	}
	status := &batchv1.JobStatus{}
	var (
		failedIn                        []string
		failed, complete, criteriaMet   jobCondition
		started, completed              int
		earliestStart, latestCompletion *metav1.Time
	)
	err := eachReportedStatus(template, items, func(cluster string, m *batchv1.JobStatus) {
		status.Active += m.Active
		status.Succeeded += m.Succeeded
		status.Failed += m.Failed
		switch jobFinished(m) {
		case batchv1.JobFailed:
			failedIn = append(failedIn, cluster)
			failed.add(*trueCondition(m, batchv1.JobFailed))
		case batchv1.JobComplete:
			complete.add(*trueCondition(m, batchv1.JobComplete))
		}
		if c := trueCondition(m, batchv1.JobSuccessCriteriaMet); c != nil {
			criteriaMet.add(*c)
		}
		if m.StartTime != nil {
			started++
			if earliestStart == nil || m.StartTime.Before(earliestStart) {
				earliestStart = m.StartTime
			}
		}
		if m.CompletionTime != nil {
			completed++
			if latestCompletion == nil || latestCompletion.Before(m.CompletionTime) {
				latestCompletion = m.CompletionTime
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if len(failedIn) > 0 {
		failed.Type, failed.Status, failed.Reason = batchv1.JobFailed, corev1.ConditionTrue, "JobFailed"
		failed.Message = "Job executed failed in member clusters " + strings.Join(failedIn, ",")
		status.Conditions = append(status.Conditions, failed.JobCondition)
	}
	if complete.members > 0 && complete.members == len(items) {
		complete.Type, complete.Status, complete.Reason, complete.Message = batchv1.JobComplete, corev1.ConditionTrue, "Completed", "Job completed"
		status.Conditions = append(status.Conditions, complete.JobCondition)
		if criteriaMet.members == len(items) {
			criteriaMet.Type, criteriaMet.Status = batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue
			criteriaMet.Reason, criteriaMet.Message = "CompletionsReached", "All member clusters have met success criteria"
			status.Conditions = append(status.Conditions, criteriaMet.JobCondition)
		}
	}
	status.StartTime = old.StartTime
	if status.StartTime == nil && started > 0 && started == len(items) {
		status.StartTime = earliestStart
	}
	if latestCompletion != nil && completed == len(items) {
		status.CompletionTime = latestCompletion
	}
	return status, nil
}

func aggregateCronJob(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	status := &batchv1.CronJobStatus{}
	err := eachReportedStatus(template, items, func(_ string, m *batchv1.CronJobStatus) {
		status.Active = append(status.Active, m.Active...)
		status.LastScheduleTime = latest(status.LastScheduleTime, m.LastScheduleTime)
		status.LastSuccessfulTime = latest(status.LastSuccessfulTime, m.LastSuccessfulTime)
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}

func latest(a, b *metav1.Time) *metav1.Time {
	if a == nil || (b != nil && a.Before(b)) {
		return b
	}
	return a
}

func aggregatePod(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	if len(items) == 0 {
		return nil, nil
	}
	status := &corev1.PodStatus{}
	phases := map[corev1.PodPhase]bool{}
	for _, item := range items {
		m := &corev1.PodStatus{}
		ok, err := memberStatus(template, item, m)
		if err != nil {
			return nil, err
		}
		if !ok {
			phases[corev1.PodPending] = true
			continue
		}
		phases[m.Phase] = true
		for _, c := range m.ContainerStatuses {
			status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{Ready: c.Ready, State: c.State})
		}
		for _, c := range m.InitContainerStatuses {
			status.InitContainerStatuses = append(status.InitContainerStatuses, corev1.ContainerStatus{Ready: c.Ready, State: c.State})
		}
	}
	// Unknown, deprecated, counts as none.
	for _, p := range []corev1.PodPhase{corev1.PodFailed, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded} {
		if phases[p] {
			status.Phase = p
			break
		}
	}
	return status, nil
}

func aggregateService(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	if t, _, _ := unstructured.NestedString(template.Object, "spec", "type"); t != string(corev1.ServiceTypeLoadBalancer) {
		return nil, nil
	}
	var ingress []corev1.LoadBalancerIngress
	err := eachReportedStatus(template, items, func(_ string, m *corev1.ServiceStatus) {
		ingress = append(ingress, m.LoadBalancer.Ingress...)
	})
	if err != nil {
		return nil, err
	}
	return &corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: mergeIngress(ingress)}}, nil
}

func aggregateIngress(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	var ingress []corev1.LoadBalancerIngress
	err := eachReportedStatus(template, items, func(_ string, m *networkingv1.IngressStatus) {
		for _, i := range m.LoadBalancer.Ingress {
			in := corev1.LoadBalancerIngress{IP: i.IP, Hostname: i.Hostname}
			for _, p := range i.Ports {
				in.Ports = append(in.Ports, corev1.PortStatus{Port: p.Port, Protocol: p.Protocol, Error: p.Error})
			}
			ingress = append(ingress, in)
		}
	})
	if err != nil {
		return nil, err
	}
	status := &networkingv1.IngressStatus{}
	for _, i := range mergeIngress(ingress) {
		out := networkingv1.IngressLoadBalancerIngress{IP: i.IP, Hostname: i.Hostname}
		for _, p := range i.Ports {
			out.Ports = append(out.Ports, networkingv1.IngressPortStatus{Port: p.Port, Protocol: p.Protocol, Error: p.Error})
		}
		status.LoadBalancer.Ingress = append(status.LoadBalancer.Ingress, out)
	}
	return status, nil
}

// mergeIngress makes one load balancer ingress point of those with the same
// hostname, IP and IP mode, with the ports of all of them (each once), and
// sorts them: by hostname, those with none last, then IP, then IP mode,
// none last; ports by number, protocol and error, none first.
func mergeIngress(ingress []corev1.LoadBalancerIngress) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	for _, in := range ingress {
		i := slices.IndexFunc(out, func(o corev1.LoadBalancerIngress) bool {
			return o.Hostname == in.Hostname && o.IP == in.IP && deref(o.IPMode) == deref(in.IPMode)
		})
		if i < 0 {
			out = append(out, corev1.LoadBalancerIngress{Hostname: in.Hostname, IP: in.IP, IPMode: in.IPMode})
			i = len(out) - 1
		}
		for _, p := range in.Ports {
			if !slices.ContainsFunc(out[i].Ports, func(q corev1.PortStatus) bool { return comparePorts(p, q) == 0 }) {
				out[i].Ports = append(out[i].Ports, p)
			}
		}
	}
	for _, o := range out {
		slices.SortFunc(o.Ports, comparePorts)
	}
	slices.SortFunc(out, func(a, b corev1.LoadBalancerIngress) int {
		if c := lastIfEmpty(a.Hostname, b.Hostname); c != 0 {
			return c
		}
		if c := cmp.Compare(a.IP, b.IP); c != 0 {
			return c
		}
		return lastIfEmpty(deref(a.IPMode), deref(b.IPMode))
	})
	return out
}

func comparePorts(a, b corev1.PortStatus) int {
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Protocol, b.Protocol); c != 0 {
		return c
	}
	switch {
	case a.Error == nil && b.Error == nil:
		return 0
	case a.Error == nil:
		return -1
	case b.Error == nil:
		return 1
	}
	return cmp.Compare(*a.Error, *b.Error)
}

// lastIfEmpty orders strings with the empty one after every other.
func lastIfEmpty[S ~string](a, b S) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return cmp.Compare(a, b)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func aggregatePVC(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	status := &corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}
	for _, item := range items {
		m := &corev1.PersistentVolumeClaimStatus{}
		ok, err := memberStatus(template, item, m)
		if err != nil {
			return nil, err
		}
		if !ok {
			m.Phase = corev1.ClaimPending
		}
		if m.Phase == corev1.ClaimLost {
			status.Phase = corev1.ClaimLost
			break
		}
		if m.Phase != corev1.ClaimBound {
			status.Phase = m.Phase
		}
	}
	return status, nil
}

func aggregatePV(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	phases := map[corev1.PersistentVolumePhase]bool{}
	for _, item := range items {
		m := &corev1.PersistentVolumeStatus{}
		ok, err := memberStatus(template, item, m)
		if err != nil {
			return nil, err
		}
		if !ok {
			m.Phase = corev1.VolumePending
		}
		phases[m.Phase] = true
	}
	status := &corev1.PersistentVolumeStatus{}
	for _, p := range []corev1.PersistentVolumePhase{corev1.VolumeFailed, corev1.VolumePending, corev1.VolumeAvailable, corev1.VolumeBound, corev1.VolumeReleased} {
		if phases[p] {
			status.Phase = p
			break
		}
	}
	return status, nil
}

func aggregatePDB(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	status := &policyv1.PodDisruptionBudgetStatus{}
	err := eachReportedStatus(template, items, func(cluster string, m *policyv1.PodDisruptionBudgetStatus) {
		status.CurrentHealthy += m.CurrentHealthy
		status.DesiredHealthy += m.DesiredHealthy
		status.ExpectedPods += m.ExpectedPods
		status.DisruptionsAllowed += m.DisruptionsAllowed
		for pod, at := range m.DisruptedPods {
			if status.DisruptedPods == nil {
				status.DisruptedPods = map[string]metav1.Time{}
			}
			status.DisruptedPods[cluster+"/"+pod] = at
		}
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}

func aggregateHPA(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) (any, error) {
	status := &hpaReplicas{}
	err := eachReportedStatus(template, items, func(_ string, m *hpaReplicas) {
		status.CurrentReplicas += m.CurrentReplicas
		status.DesiredReplicas += m.DesiredReplicas
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}
