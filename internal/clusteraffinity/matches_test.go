package clusteraffinity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// member1 is an AWS member in us-east-1a with env=prod.
func member1() *clusterv1alpha1.MemberCluster {
	return &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"env": "prod"}},
		Spec:       clusterv1alpha1.MemberClusterSpec{Provider: "aws", Region: "us-east-1", Zone: "us-east-1a"},
	}
}

// bare is a member with no labels, provider, region or zone.
func bare() *clusterv1alpha1.MemberCluster {
	return &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
}

func fields(reqs ...policyv1alpha1.FieldSelectorRequirement) *policyv1alpha1.FieldSelector {
	return &policyv1alpha1.FieldSelector{MatchExpressions: reqs}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) policyv1alpha1.FieldSelectorRequirement {
	return policyv1alpha1.FieldSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestMatches(t *testing.T) {
	multiZone := member1()
	multiZone.Spec.Zone = ""
	multiZone.Spec.Zones = []string{"us-east-1b", "us-east-1c"}

	tests := []struct {
		name     string
		affinity *policyv1alpha1.ClusterAffinity
		member   *clusterv1alpha1.MemberCluster
		want     bool
	}{
		{"nil affinity selects every member", nil, member1(), true},
		{"empty affinity selects every member", &policyv1alpha1.ClusterAffinity{}, bare(), true},
		{"listed name selects", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2", "member1"}}, member1(), true},
		{"unlisted name does not select", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}, member1(), false},
		{"exclude wins over a listed name", &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}, ExcludeClusters: []string{"member1"}}, member1(), false},
		{"exclude alone drops only the excluded", &policyv1alpha1.ClusterAffinity{ExcludeClusters: []string{"member2"}}, member1(), true},
		{"label selector that matches selects",
			&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, member1(), true},
		{"label selector that does not match drops",
			&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}, member1(), false},
		{"empty label selector selects every member",
			&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{}}, bare(), true},
		{"all criteria must match: labels match but name does not",
			&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, ClusterNames: []string{"member2"}}, member1(), false},
		{"provider In", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("provider", corev1.NodeSelectorOpIn, "gcp", "aws"))}, member1(), true},
		{"provider In, other provider", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("provider", corev1.NodeSelectorOpIn, "gcp"))}, member1(), false},
		{"region NotIn, listed", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("region", corev1.NodeSelectorOpNotIn, "us-east-1"))}, member1(), false},
		{"region NotIn matches a member without region", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("region", corev1.NodeSelectorOpNotIn, "us-east-1"))}, bare(), true},
		{"region Exists on a member without region", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("region", corev1.NodeSelectorOpExists))}, bare(), false},
		{"provider DoesNotExist on a member without provider", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("provider", corev1.NodeSelectorOpDoesNotExist))}, bare(), true},
		{"zone In uses spec.zone", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("zone", corev1.NodeSelectorOpIn, "us-east-1a"))}, member1(), true},
		{"zone In matches any of spec.zones", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("zone", corev1.NodeSelectorOpIn, "us-east-1c"))}, multiZone, true},
		{"zone NotIn fails when any zone is listed", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("zone", corev1.NodeSelectorOpNotIn, "us-east-1c"))}, multiZone, false},
		{"zone NotIn passes when no zone is listed", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("zone", corev1.NodeSelectorOpNotIn, "eu-west-1a"))}, multiZone, true},
		{"zone DoesNotExist on a zoned member", &policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("zone", corev1.NodeSelectorOpDoesNotExist))}, member1(), false},
		{"field requirements are ANDed",
			&policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("provider", corev1.NodeSelectorOpIn, "aws"), req("region", corev1.NodeSelectorOpIn, "eu-west-1"))}, member1(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Matches(tt.affinity, tt.member)
			if err != nil {
				t.Fatalf("Matches: unexpected error %v", err)
			}
			if got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchesRejectsInvalidAffinities(t *testing.T) {
	tests := []struct {
		name     string
		affinity *policyv1alpha1.ClusterAffinity
		wantErr  string
	}{
		{"unknown field key",
			&policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("os", corev1.NodeSelectorOpIn, "linux"))},
			`fieldSelector: matchExpressions[0]: unknown key "os"`},
		{"numeric operator on a field",
			&policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("region", corev1.NodeSelectorOpGt, "1"))},
			`fieldSelector: matchExpressions[0]: operator "Gt" on "region" is not supported`},
		{"In without values",
			&policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("zone", corev1.NodeSelectorOpIn))},
			`fieldSelector: matchExpressions[0]: operator In on "zone" needs at least one value`},
		{"Exists with values",
			&policyv1alpha1.ClusterAffinity{FieldSelector: fields(req("provider", corev1.NodeSelectorOpExists, "aws"))},
			`fieldSelector: matchExpressions[0]: operator Exists on "provider" takes no values`},
		{"invalid label selector operator",
			&policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}},
			`labelSelector: "Near" is not a valid label selector operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Matches(tt.affinity, member1())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Matches error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestMatchesNeedsAMember(t *testing.T) {
	if _, err := Matches(nil, nil); err == nil {
		t.Fatal("Matches(nil, nil) = nil error, want an error")
	}
}

func TestExcludeWinsBeforeAnInvalidSelectorIsEvaluated(t *testing.T) {
	// An excluded member is never selected, so the rest is not consulted.
	affinity := &policyv1alpha1.ClusterAffinity{
		ExcludeClusters: []string{"member1"},
		FieldSelector:   fields(req("os", corev1.NodeSelectorOpIn, "linux")),
	}
	got, err := Matches(affinity, member1())
	if err != nil || got {
		t.Fatalf("Matches = %v, %v; want false, nil", got, err)
	}
}
