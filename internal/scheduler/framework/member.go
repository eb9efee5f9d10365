package framework

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// Member is a MemberCluster compiled for scheduling: the fields filters and
// scores read, with strings they report prepared once per snapshot so that a
// decision over a thousand members allocates little.
type Member struct {
	// Index is the member's position in its Snapshot (members sorted by name).
	Index int
	Name  string

	Labels   map[string]string
	Provider string
	Region   string
	// Zone is the member's zone for spreading: spec.zone, else the first of
	// spec.zones in sorted order.
	Zone string
	// Zones is every zone the member spans (spec.zone and spec.zones), sorted.
	Zones []string

	// Taints keeps the NoSchedule and NoExecute taints, the ones that keep a
	// binding off; TaintReasons[i] describes Taints[i].
	Taints       []corev1.Taint
	TaintReasons []string

	Unschedulable bool
	Deleting      bool
	// NotReadyReason is empty when the Ready condition is True.
	NotReadyReason string

	// APIsReported is false when the member reports no API enablements, so
	// that "not served" and "unknown" are told apart.
	APIsReported bool
	apis         map[apiKey]struct{}

	// Model is the member's capacity model; nil when it has none.
	Model *capacity.Model
	// ModelObservedTime is when the estimator computed Model.
	ModelObservedTime time.Time
}

type apiKey struct{ groupVersion, kind string }

// Serves says whether the member serves kind in groupVersion.
func (m *Member) Serves(groupVersion, kind string) bool {
	_, ok := m.apis[apiKey{groupVersion, kind}]
	return ok
}

func compileMember(mc *clusterv1alpha1.MemberCluster) Member {
	m := Member{
		Name:          mc.Name,
		Labels:        mc.Labels,
		Provider:      mc.Spec.Provider,
		Region:        mc.Spec.Region,
		Unschedulable: mc.Spec.Unschedulable,
		Deleting:      mc.DeletionTimestamp != nil,
		APIsReported:  len(mc.Status.APIEnablements) > 0,
	}
	m.Zones = zonesOf(mc.Spec.Zone, mc.Spec.Zones)
	m.Zone = mc.Spec.Zone
	if m.Zone == "" && len(m.Zones) > 0 {
		m.Zone = m.Zones[0]
	}
	for _, t := range mc.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			m.Taints = append(m.Taints, t)
			m.TaintReasons = append(m.TaintReasons, fmt.Sprintf("untolerated taint %s", t.ToString()))
		}
	}
	m.NotReadyReason = notReadyReason(mc.Status.Conditions)
	if m.APIsReported {
		m.apis = make(map[apiKey]struct{})
		for _, e := range mc.Status.APIEnablements {
			for _, r := range e.Resources {
				m.apis[apiKey{e.GroupVersion, r.Kind}] = struct{}{}
			}
		}
	}
	if cm := mc.Status.CapacityModel; cm != nil {
		m.Model = capacity.NewModel(cm)
		m.ModelObservedTime = cm.ObservedTime.Time
	}
	return m
}

func zonesOf(zone string, zones []string) []string {
	var all []string
	if zone != "" {
		all = append(all, zone)
	}
	for _, z := range zones {
		if z != "" {
			all = append(all, z)
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// notReadyReason describes why the member is not Ready, or is empty.
func notReadyReason(conditions []metav1.Condition) string {
	for i := range conditions {
		c := &conditions[i]
		if c.Type != clusterv1alpha1.ConditionReady {
			continue
		}
		if c.Status == metav1.ConditionTrue {
			return ""
		}
		if c.Reason != "" {
			return fmt.Sprintf("not Ready (Ready=%s, %s)", c.Status, c.Reason)
		}
		return fmt.Sprintf("not Ready (Ready=%s)", c.Status)
	}
	return "not Ready (no Ready condition)"
}
