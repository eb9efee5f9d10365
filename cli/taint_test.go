package cli

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestParseTaintSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    string // key=value:Effect, "-" suffix when removing
		wantErr string
	}{
		{in: "maintenance=kernel:NoSchedule", want: "maintenance=kernel:NoSchedule"},
		{in: "example.com/down:NoExecute", want: "example.com/down:NoExecute"},
		{in: "maintenance:NoExecute-", want: "maintenance:NoExecute-"},
		{in: "maintenance-", want: "maintenance-"},
		{in: "maintenance", wantErr: "want KEY[=VALUE]:EFFECT"},
		{in: "maintenance:Sometimes", wantErr: `effect "Sometimes"`},
		{in: "bad key:NoSchedule", wantErr: "invalid key"},
		{in: "k=bad value:NoSchedule", wantErr: "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := parseTaintSpec(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := describeTaint(s.taint)
			if s.remove {
				got += "-"
			}
			if got != tt.want {
				t.Errorf("parsed %q, want %q", got, tt.want)
			}
		})
	}
}

func TestApplyTaints(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	member := func(taints ...corev1.Taint) *clusterv1alpha1.MemberCluster {
		return &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1alpha1.MemberClusterSpec{Taints: taints}}
	}
	parse := func(s string) taintSpec { ts, _ := parseTaintSpec(s); return ts }
	render := func(m *clusterv1alpha1.MemberCluster) string {
		var parts []string
		for _, t := range m.Spec.Taints {
			parts = append(parts, describeTaint(t))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		name      string
		m         *clusterv1alpha1.MemberCluster
		spec      string
		overwrite bool
		want      string
		wantErr   string
	}{
		{name: "add with timeAdded", m: member(), spec: "k=v:NoExecute", want: "k=v:NoExecute"},
		{name: "adding an existing taint needs --overwrite", m: member(corev1.Taint{Key: "k", Value: "a", Effect: "NoSchedule"}), spec: "k=b:NoSchedule", wantErr: "--overwrite"},
		{name: "--overwrite changes the value", m: member(corev1.Taint{Key: "k", Value: "a", Effect: "NoSchedule"}), spec: "k=b:NoSchedule", overwrite: true, want: "k=b:NoSchedule"},
		{name: "the same key with another effect is another taint", m: member(corev1.Taint{Key: "k", Effect: "NoSchedule"}), spec: "k:NoExecute", want: "k:NoSchedule k:NoExecute"},
		{name: "remove one effect", m: member(corev1.Taint{Key: "k", Effect: "NoSchedule"}, corev1.Taint{Key: "k", Effect: "NoExecute"}), spec: "k:NoExecute-", want: "k:NoSchedule"},
		{name: "remove every effect of a key", m: member(corev1.Taint{Key: "k", Effect: "NoSchedule"}, corev1.Taint{Key: "k", Effect: "NoExecute"}, corev1.Taint{Key: "o", Effect: "NoSchedule"}), spec: "k-", want: "o:NoSchedule"},
		{name: "removing a missing taint is an error", m: member(), spec: "k:NoExecute-", wantErr: "has no taint k:NoExecute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := applyTaints(tt.m, []taintSpec{parse(tt.spec)}, tt.overwrite, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := render(tt.m); got != tt.want {
				t.Errorf("taints %q, want %q", got, tt.want)
			}
			for _, tn := range tt.m.Spec.Taints {
				if tn.Key == "k" && tn.Effect == "NoExecute" && strings.HasPrefix(tt.name, "add") && (tn.TimeAdded == nil || !tn.TimeAdded.Time.Equal(now)) {
					t.Errorf("timeAdded %v, want %v", tn.TimeAdded, now)
				}
			}
		})
	}
}
