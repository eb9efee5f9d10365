package capacity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestTolerates(t *testing.T) {
	noExec := corev1.Taint{Key: "cluster.flotilla.io/unreachable", Effect: corev1.TaintEffectNoExecute}
	keyed := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	numeric := corev1.Taint{Key: "level", Value: "3", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name       string
		toleration corev1.Toleration
		taint      corev1.Taint
		want       bool
	}{
		{"Exists with matching key and any value", corev1.Toleration{Key: "team", Operator: corev1.TolerationOpExists}, keyed, true},
		{"Equal with the same value", corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: "a"}, keyed, true},
		{"empty operator means Equal", corev1.Toleration{Key: "team", Value: "a"}, keyed, true},
		{"Equal with another value", corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b"}, keyed, false},
		{"another key", corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}, keyed, false},
		{"empty key with Exists tolerates everything", corev1.Toleration{Operator: corev1.TolerationOpExists}, noExec, true},
		{"effect must match when given", corev1.Toleration{Key: "team", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, keyed, false},
		{"empty effect matches every effect", corev1.Toleration{Key: noExec.Key, Operator: corev1.TolerationOpExists}, noExec, true},
		{"Gt compares integers", corev1.Toleration{Key: "level", Operator: corev1.TolerationOpGt, Value: "2"}, numeric, true},
		{"Lt compares integers", corev1.Toleration{Key: "level", Operator: corev1.TolerationOpLt, Value: "2"}, numeric, false},
		{"unknown operator tolerates nothing", corev1.Toleration{Key: "team", Operator: "Matches"}, keyed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tolerates([]corev1.Toleration{tt.toleration}, &tt.taint); got != tt.want {
				t.Errorf("Tolerates = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequirementMatches(t *testing.T) {
	tests := []struct {
		name    string
		op      corev1.NodeSelectorOperator
		values  []string
		value   string
		present bool
		want    bool
	}{
		{"In present", corev1.NodeSelectorOpIn, []string{"a", "b"}, "b", true, true},
		{"In absent", corev1.NodeSelectorOpIn, []string{"a"}, "", false, false},
		{"NotIn present other", corev1.NodeSelectorOpNotIn, []string{"a"}, "b", true, true},
		{"NotIn present listed", corev1.NodeSelectorOpNotIn, []string{"a"}, "a", true, false},
		{"NotIn absent", corev1.NodeSelectorOpNotIn, []string{"a"}, "", false, true},
		{"Exists", corev1.NodeSelectorOpExists, nil, "", true, true},
		{"Exists absent", corev1.NodeSelectorOpExists, nil, "", false, false},
		{"DoesNotExist absent", corev1.NodeSelectorOpDoesNotExist, nil, "", false, true},
		{"DoesNotExist present", corev1.NodeSelectorOpDoesNotExist, nil, "x", true, false},
		{"Gt", corev1.NodeSelectorOpGt, []string{"5"}, "6", true, true},
		{"Gt not a number", corev1.NodeSelectorOpGt, []string{"5"}, "six", true, false},
		{"Lt", corev1.NodeSelectorOpLt, []string{"5"}, "6", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := corev1.NodeSelectorRequirement{Key: "k", Operator: tt.op, Values: tt.values}
			if got := RequirementMatches(&req, tt.value, tt.present); got != tt.want {
				t.Errorf("RequirementMatches = %v, want %v", got, tt.want)
			}
		})
	}
}
