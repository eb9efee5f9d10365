package interpreter

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// fromAPI decodes a manifest as objects read from the API are: numbers as
// int64.
func fromAPI(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return obj
}

// appsV1 is the manifest of an apps/v1 workload of the kind and generation
// given, with the spec and status given as YAML, "" for none.
func appsV1(kind string, generation int, spec, status string) string {
	manifest := fmt.Sprintf("apiVersion: apps/v1\nkind: %s\nmetadata: {name: w, generation: %d}\n", kind, generation)
	if spec != "" {
		manifest += "spec: " + spec + "\n"
	}
	if status != "" {
		manifest += "status: " + status + "\n"
	}
	return manifest
}

func TestInterpretHealthJudgesHealthFromTheObjectsStatus(t *testing.T) {
	tests := []struct {
		name        string
		manifest    string
		want        workv1alpha1.ResourceHealth
		wantMessage string
	}{
		{
			name:     "Deployment with every replica updated, ready and available",
			manifest: appsV1("Deployment", 2, "{replicas: 3}", "{observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}"),
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "Deployment whose controller has not seen the current generation",
			manifest: appsV1("Deployment", 3, "{replicas: 3}", "{observedGeneration: 2, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}"),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "generation 3 not yet observed (observed 2)",
		},
		{
			name:     "Deployment with replicas not yet ready",
			manifest: appsV1("Deployment", 1, "{replicas: 6}", "{observedGeneration: 1, updatedReplicas: 6, readyReplicas: 4, availableReplicas: 4}"),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "readyReplicas 4 of 6",
		},
		{
			name:     "Deployment just created, no status at all",
			manifest: appsV1("Deployment", 1, "{replicas: 2}", ""),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "generation 1 not yet observed (observed 0)",
		},
		{
			name:     "Deployment scaled to zero",
			manifest: appsV1("Deployment", 4, "{replicas: 0}", "{observedGeneration: 4}"),
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "StatefulSet with an old revision still running",
			manifest: appsV1("StatefulSet", 2, "{replicas: 3}", "{observedGeneration: 2, updatedReplicas: 2, readyReplicas: 3, availableReplicas: 3}"),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "updatedReplicas 2 of 3",
		},
		{
			name:     "ReplicaSet without spec.replicas wants one",
			manifest: appsV1("ReplicaSet", 1, "{}", "{observedGeneration: 1, readyReplicas: 1, availableReplicas: 1}"),
			want:     workv1alpha1.ResourceHealthy,
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
			name:     "a ClusterIP Service is healthy once applied",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a LoadBalancer Service with an ingress IP",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}\nstatus: {loadBalancer: {ingress: [{ip: 192.0.2.1}]}}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a LoadBalancer Service with an ingress hostname",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}\nstatus: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a LoadBalancer Service not yet provisioned",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}\nstatus: {loadBalancer: {}}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "load balancer not yet provisioned: no status.loadBalancer.ingress with an IP or hostname",
		},
		{
			name:     "a LoadBalancer Service whose only ingress has neither IP nor hostname",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}\nstatus: {loadBalancer: {ingress: [{ports: [{port: 80, protocol: TCP}]}]}}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "load balancer not yet provisioned: no status.loadBalancer.ingress with an IP or hostname",
		},
		{
			name:     "an Ingress with an address",
			manifest: "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nstatus: {loadBalancer: {ingress: [{ip: 192.0.2.7}]}}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "an Ingress without an address",
			manifest: "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nstatus: {loadBalancer: {}}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "no address yet: no status.loadBalancer.ingress with an IP or hostname",
		},
		{
			name:     "a PersistentVolumeClaim that is Bound",
			manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nstatus: {phase: Bound}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a PersistentVolumeClaim still Pending",
			manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nstatus: {phase: Pending}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "phase Pending, not Bound",
		},
		{
			name:     "a PersistentVolumeClaim without a phase",
			manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "not yet Bound",
		},
		{
			name:     "a Pod Running and Ready",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Running, conditions: [{type: Ready, status: \"True\"}]}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a Pod Running but not Ready",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Running, conditions: [{type: Ready, status: \"False\"}]}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "Running but not Ready",
		},
		{
			name:     "a Pod that Succeeded",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Succeeded}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a Pod Pending",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Pending}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "phase Pending",
		},
		{
			name:     "a Pod that Failed",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Failed}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "phase Failed",
		},
		{
			name:     "a Pod just created, no phase",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "no phase yet",
		},
		{
			name:     "DaemonSet updated and available on every node",
			manifest: appsV1("DaemonSet", 2, "", "{observedGeneration: 2, desiredNumberScheduled: 4, currentNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 4, numberReady: 4}"),
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "DaemonSet whose controller has not seen the current generation",
			manifest: appsV1("DaemonSet", 3, "", "{observedGeneration: 2, desiredNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 4}"),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "generation 3 not yet observed (observed 2)",
		},
		{
			name:     "DaemonSet still rolling out to some nodes",
			manifest: appsV1("DaemonSet", 2, "", "{observedGeneration: 2, desiredNumberScheduled: 4, updatedNumberScheduled: 3, numberAvailable: 4}"),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "updatedNumberScheduled 3 of 4",
		},
		{
			name:     "DaemonSet with updated Pods not yet available",
			manifest: appsV1("DaemonSet", 2, "", "{observedGeneration: 2, desiredNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 2}"),
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "numberAvailable 2 of 4 updated",
		},
		{
			name:     "DaemonSet on a member with no matching nodes",
			manifest: appsV1("DaemonSet", 1, "", "{observedGeneration: 1, desiredNumberScheduled: 0, currentNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0}"),
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a PodDisruptionBudget with enough healthy Pods",
			manifest: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nstatus: {currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a PodDisruptionBudget short of healthy Pods",
			manifest: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nstatus: {currentHealthy: 1, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 0}",
			want:     workv1alpha1.ResourceUnhealthy, wantMessage: "currentHealthy 1 of desiredHealthy 2",
		},
		{
			name:     "a CronJob is healthy once applied, as in Karmada",
			manifest: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: \"* * * * *\"}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a HorizontalPodAutoscaler is healthy once applied, as in Karmada",
			manifest: "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nstatus: {currentReplicas: 1, desiredReplicas: 5}",
			want:     workv1alpha1.ResourceHealthy,
		},
		{
			name:     "a ConfigMap is healthy once applied",
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}",
			want:     workv1alpha1.ResourceHealthy,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := InterpretHealth(fromAPI(t, tt.manifest))
			if got != tt.want || msg != tt.wantMessage {
				t.Errorf("Of = %s, %q; want %s, %q", got, msg, tt.want, tt.wantMessage)
			}
		})
	}
}
