package interpreter

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestInterpretHealthJudgesHealthFromTheObjectsStatus(t *testing.T) {
	tests := []struct {
		name        string
		manifest    string
		want        workv1alpha1.ResourceHealth
		wantMessage string
	}{
		{
			name: "Deployment with every replica updated, ready and available",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}`,
			want: workv1alpha1.ResourceHealthy,
		},
		{
			name: "Deployment whose controller has not seen the current generation",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 3}
spec: {replicas: 3}
status: {observedGeneration: 2, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}`,
			want: workv1alpha1.ResourceUnhealthy, wantMessage: "generation 3 not yet observed (observed 2)",
		},
		{
			name: "Deployment with replicas not yet ready",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 6}
status: {observedGeneration: 1, updatedReplicas: 6, readyReplicas: 4, availableReplicas: 4}`,
			want: workv1alpha1.ResourceUnhealthy, wantMessage: "readyReplicas 4 of 6",
		},
		{
			name: "Deployment just created, no status at all",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 2}`,
			want: workv1alpha1.ResourceUnhealthy, wantMessage: "generation 1 not yet observed (observed 0)",
		},
		{
			name: "Deployment scaled to zero",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 4}
spec: {replicas: 0}
status: {observedGeneration: 4}`,
			want: workv1alpha1.ResourceHealthy,
		},
		{
			name: "StatefulSet with an old revision still running",
			manifest: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, updatedReplicas: 2, readyReplicas: 3, availableReplicas: 3}`,
			want: workv1alpha1.ResourceUnhealthy, wantMessage: "updatedReplicas 2 of 3",
		},
		{
			name: "ReplicaSet without spec.replicas wants one",
			manifest: `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: r, generation: 1}
spec: {}
status: {observedGeneration: 1, readyReplicas: 1, availableReplicas: 1}`,
			want: workv1alpha1.ResourceHealthy,
		},
		{
			name:     "Job with active Pods",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus: {active: 2}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "Job that succeeded",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus: {succeeded: 1}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "Job not started",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "no active or succeeded Pods yet",
		},
		{
			name:     "Job that failed",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus:\n  failed: 6\n  conditions: [{type: Failed, status: \"True\", message: BackoffLimitExceeded}]",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "failed: BackoffLimitExceeded",
		},
		{
			name:     "a Service is healthy once applied",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}",
			want:     workv1alpha1.ResourceHealthy,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Decoded as objects read from the API are: numbers as int64.
			raw, err := yaml.YAMLToJSON([]byte(tt.manifest))
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
			got, msg := InterpretHealth(obj)
			if got != tt.want || msg != tt.wantMessage {
				t.Errorf("Of = %s, %q; want %s, %q", got, msg, tt.want, tt.wantMessage)
			}
		})
	}
}
