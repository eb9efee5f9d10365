package eviction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// DefaultApplicationToleration is decisionConditions.tolerationSeconds
// when unset (the schema's default, as Karmada's).
const DefaultApplicationToleration = 300 * time.Second

// DefaultApplicationGrace is failover.application.gracePeriodSeconds when
// unset (Karmada's defaulting webhook fills 600 in for Gracefully).
const DefaultApplicationGrace = 600 * time.Second

// ApplicationDue is when a binding must leave a member its workload has
// been unhealthy on.
type ApplicationDue struct {
	Member string
	At     time.Time
	// Since is when the workload turned Unhealthy there.
	Since time.Time
}

// ApplicationDuesOf lists, under failover.application, the members of
// spec.clusters whose workload is Unhealthy (the binding's
// aggregatedStatus, healthTransitionTime), due tolerationSeconds after it
// turned so. Unknown health never evicts: a member that cannot be read is
// cluster failover's business. Nor does a member the binding holds an
// eviction task for: the scheduler placed it back there because no other
// member could take it.
func ApplicationDuesOf(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus) []ApplicationDue {
	app := applicationOf(spec)
	if app == nil {
		return nil
	}
	toleration := DefaultApplicationToleration
	if s := app.DecisionConditions.TolerationSeconds; s != nil {
		toleration = time.Duration(*s) * time.Second
	}
	var out []ApplicationDue
	for _, item := range status.AggregatedStatus {
		if item.Health != workv1alpha1.ResourceUnhealthy || item.HealthTransitionTime == nil {
			continue
		}
		if !slices.ContainsFunc(spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == item.ClusterName }) {
			continue
		}
		// Evicted from it already and placed back there, because no other
		// member could take it: evicting again would only churn.
		if Evicting(spec, item.ClusterName) {
			continue
		}
		since := item.HealthTransitionTime.Time
		out = append(out, ApplicationDue{Member: item.ClusterName, At: since.Add(toleration), Since: since})
	}
	return out
}

func applicationOf(spec *workv1alpha1.ResourceBindingSpec) *policyv1alpha1.ApplicationFailoverBehavior {
	if spec.Failover == nil {
		return nil
	}
	return spec.Failover.Application
}

// ApplicationCause is the cause of an application failover from due's
// member: failover.application's purge mode (Gracefully by default) and
// grace period, and statePreservation's labels read from the failed copy's
// status there.
func ApplicationCause(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, due ApplicationDue) (Cause, error) {
	app := applicationOf(spec)
	cause := Cause{
		Reason:    workv1alpha1.EvictionReasonApplicationFailure,
		Producer:  workv1alpha1.EvictionProducerApplicationFailover,
		PurgeMode: policyv1alpha1.PurgeModeGracefully,
		Grace:     DefaultApplicationGrace,
		Message: fmt.Sprintf("the workload has been Unhealthy on member %s since %s, past decisionConditions.tolerationSeconds (%s)",
			due.Member, due.Since.UTC().Format(time.RFC3339), due.At.Sub(due.Since)),
	}
	if app == nil {
		return cause, nil
	}
	if app.PurgeMode != "" {
		cause.PurgeMode = app.PurgeMode
	}
	if s := app.GracePeriodSeconds; s != nil {
		cause.Grace = time.Duration(*s) * time.Second
	}
	if app.StatePreservation == nil {
		return cause, nil
	}
	var failed map[string]any
	for _, item := range status.AggregatedStatus {
		if item.ClusterName == due.Member && item.Status != nil {
			if err := json.Unmarshal(item.Status.Raw, &failed); err != nil {
				return cause, fmt.Errorf("read the status of the copy on %s: %w", due.Member, err)
			}
		}
	}
	state, err := PreservedState(app.StatePreservation.Rules, failed)
	if err != nil {
		return cause, err
	}
	cause.PreservedLabelState = state
	return cause, nil
}

// PreservedState evaluates statePreservation rules, each a JSONPath over the
// failed copy's status (as Karmada's: `{ .field }`), into label values.
func PreservedState(rules []policyv1alpha1.StatePreservationRule, status map[string]any) (map[string]string, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, r := range rules {
		jp := jsonpath.New(r.AliasLabelName)
		if err := jp.Parse(r.JSONPath); err != nil {
			return nil, fmt.Errorf("statePreservation rule %s: jsonPath %q: %w", r.AliasLabelName, r.JSONPath, err)
		}
		var buf bytes.Buffer
		if err := jp.Execute(&buf, status); err != nil {
			return nil, fmt.Errorf("statePreservation rule %s: jsonPath %q on the failed copy's status: %w", r.AliasLabelName, r.JSONPath, err)
		}
		out[r.AliasLabelName] = strings.TrimSpace(buf.String())
	}
	return out, nil
}

// PreservedLabelsFor are the labels member's copy of the workload carries:
// those of the application failover tasks it replaces (member was not
// among the task's clustersBeforeFailover).
func PreservedLabelsFor(spec *workv1alpha1.ResourceBindingSpec, member string) map[string]string {
	var out map[string]string
	for _, t := range spec.GracefulEvictionTasks {
		if len(t.PreservedLabelState) == 0 || slices.Contains(t.ClustersBeforeFailover, member) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		for k, v := range t.PreservedLabelState {
			out[k] = v
		}
	}
	return out
}
