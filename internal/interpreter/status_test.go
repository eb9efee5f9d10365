package interpreter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// jsonOf decodes YAML or JSON into plain JSON values, for comparing
// statuses whatever their number types.
func jsonOf(t *testing.T, doc []byte) any {
	t.Helper()
	raw, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func TestReflectStatusKeepsWhatKarmadaKeepsPerKind(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     string // the kept status as YAML; "" for none
	}{
		{
			name: "Deployment: the counts and observedGeneration, with the member object's generation",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 3}
status:
  observedGeneration: 3
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 2
  availableReplicas: 2
  unavailableReplicas: 1
  terminatingReplicas: 1
  collisionCount: 1
  conditions: [{type: Available, status: "True"}]`,
			want: "{generation: 3, observedGeneration: 3, replicas: 3, updatedReplicas: 3, readyReplicas: 2, availableReplicas: 2, unavailableReplicas: 1}",
		},
		{
			name: "Deployment rendered from template generation 7",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2, annotations: {resourcetemplate.flotilla.io/generation: "7"}}
status: {observedGeneration: 2, replicas: 1}`,
			want: "{generation: 2, resourceTemplateGeneration: 7, observedGeneration: 2, replicas: 1}",
		},
		{
			name: "Deployment whose template generation cannot be read counts as generation 0",
			manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2, annotations: {resourcetemplate.flotilla.io/generation: "seven"}}
status: {observedGeneration: 2}`,
			want: "{generation: 2, resourceTemplateGeneration: 0, observedGeneration: 2}",
		},
		{
			name:     "Deployment without a status has none",
			manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, generation: 1}",
			want:     "",
		},
		{
			name:     "Deployment with an empty status keeps its generation",
			manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, generation: 1}\nstatus: {}",
			want:     "{generation: 1}",
		},
		{
			name: "StatefulSet: the counts and observedGeneration, not the revisions",
			manifest: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, generation: 2}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 1, updatedReplicas: 2, availableReplicas: 3, currentRevision: s-1, updateRevision: s-2, collisionCount: 0}`,
			want: "{generation: 2, observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 1, updatedReplicas: 2, availableReplicas: 3}",
		},
		{
			name: "ReplicaSet: replicas, readyReplicas, availableReplicas and observedGeneration",
			manifest: `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: r, generation: 1}
status: {observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 1}`,
			want: "{generation: 1, observedGeneration: 1, replicas: 2, readyReplicas: 2, availableReplicas: 1}",
		},
		{
			name: "DaemonSet: the node counts and observedGeneration",
			manifest: `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, generation: 4}
status: {observedGeneration: 4, currentNumberScheduled: 3, numberMisscheduled: 1, desiredNumberScheduled: 3, numberReady: 2, updatedNumberScheduled: 3, numberAvailable: 2, numberUnavailable: 1, collisionCount: 2}`,
			want: "{generation: 4, observedGeneration: 4, currentNumberScheduled: 3, numberMisscheduled: 1, desiredNumberScheduled: 3, numberReady: 2, updatedNumberScheduled: 3, numberAvailable: 2, numberUnavailable: 1}",
		},
		{
			name: "LoadBalancer Service: the load balancer only",
			manifest: `apiVersion: v1
kind: Service
metadata: {name: s}
spec: {type: LoadBalancer}
status:
  loadBalancer: {ingress: [{ip: 192.0.2.1, ports: [{port: 80, protocol: TCP}]}]}
  conditions: [{type: Ready, status: "True", reason: Ok, message: "", lastTransitionTime: "2025-01-01T00:00:00Z"}]`,
			want: "{loadBalancer: {ingress: [{ip: 192.0.2.1, ports: [{port: 80, protocol: TCP}]}]}}",
		},
		{
			name:     "ClusterIP Service: none",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: ClusterIP}\nstatus: {loadBalancer: {}}",
			want:     "",
		},
		{
			name:     "LoadBalancer Service without a status: none",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}",
			want:     "",
		},
		{
			name: "Job: counts, conditions and times, not ready, terminating or uncounted Pods",
			manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status:
  active: 1
  succeeded: 2
  failed: 1
  ready: 1
  terminating: 0
  uncountedTerminatedPods: {}
  startTime: "2025-01-01T10:00:00Z"
  conditions: [{type: SuccessCriteriaMet, status: "True", lastProbeTime: "2025-01-01T10:05:00Z", lastTransitionTime: "2025-01-01T10:05:00Z"}]`,
			want: `{active: 1, succeeded: 2, failed: 1, startTime: "2025-01-01T10:00:00Z",
  conditions: [{type: SuccessCriteriaMet, status: "True", lastProbeTime: "2025-01-01T10:05:00Z", lastTransitionTime: "2025-01-01T10:05:00Z"}]}`,
		},
		{
			name:     "Job with an empty status: an empty one",
			manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nstatus: {}",
			want:     "{}",
		},
		{
			name: "PodDisruptionBudget: the Pod counts and disrupted Pods, not conditions",
			manifest: `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: b, generation: 1}
status: {observedGeneration: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1,
  disruptedPods: {p-1: "2025-01-01T00:00:00Z"}, conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods, message: "", lastTransitionTime: "2025-01-01T00:00:00Z"}]}`,
			want: `{currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1, disruptedPods: {p-1: "2025-01-01T00:00:00Z"}}`,
		},
		{
			name: "HorizontalPodAutoscaler v2: currentReplicas and desiredReplicas",
			manifest: `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}
status: {currentReplicas: 2, desiredReplicas: 4, lastScaleTime: "2025-01-01T00:00:00Z", conditions: [{type: AbleToScale, status: "True"}]}`,
			want: "{currentReplicas: 2, desiredReplicas: 4}",
		},
		{
			name:     "HorizontalPodAutoscaler v1: currentReplicas and desiredReplicas",
			manifest: "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nstatus: {currentReplicas: 0, desiredReplicas: 0, currentCPUUtilizationPercentage: 12}",
			want:     "{currentReplicas: 0, desiredReplicas: 0}",
		},
		{
			name:     "Pod: the whole status",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Running, podIP: 10.0.0.1, containerStatuses: [{name: app, ready: true, restartCount: 1, image: nginx, imageID: x, state: {running: {}}}]}",
			want:     "{phase: Running, podIP: 10.0.0.1, containerStatuses: [{name: app, ready: true, restartCount: 1, image: nginx, imageID: x, state: {running: {}}}]}",
		},
		{
			name:     "Pod without a status: none",
			manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}",
			want:     "",
		},
		{
			name:     "PersistentVolumeClaim: the whole status",
			manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nstatus: {phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}",
			want:     "{phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}",
		},
		{
			name:     "Ingress: the whole status",
			manifest: "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nstatus: {loadBalancer: {ingress: [{hostname: a.example.com}]}}",
			want:     "{loadBalancer: {ingress: [{hostname: a.example.com}]}}",
		},
		{
			name:     "CronJob: the whole status",
			manifest: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nstatus: {lastScheduleTime: \"2025-01-01T00:00:00Z\", active: [{kind: Job, name: c-1}]}",
			want:     "{lastScheduleTime: \"2025-01-01T00:00:00Z\", active: [{kind: Job, name: c-1}]}",
		},
		{
			name:     "a custom resource: the whole status",
			manifest: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nstatus: {phase: Ready, anything: [1, 2]}",
			want:     "{phase: Ready, anything: [1, 2]}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromAPI(t, tt.manifest)
			before := obj.DeepCopy()
			got, err := ReflectStatus(obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
				t.Errorf("ReflectStatus changed the object (-before +after):\n%s", diff)
			}
			if tt.want == "" {
				if got != nil {
					t.Fatalf("ReflectStatus = %s, want none", got.Raw)
				}
				return
			}
			if got == nil {
				t.Fatalf("ReflectStatus = none, want %s", tt.want)
			}
			if diff := cmp.Diff(jsonOf(t, []byte(tt.want)), jsonOf(t, got.Raw)); diff != "" {
				t.Errorf("ReflectStatus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReflectStatusRefusesAMalformedStatus(t *testing.T) {
	obj := fromAPI(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nstatus: {replicas: many}")
	if got, err := ReflectStatus(obj); err == nil {
		t.Fatalf("ReflectStatus = %s, want an error", got.Raw)
	}
}

// member is one member's status as ReflectStatus kept it, as YAML; "" when
// the member has not reported one (not applied yet).
type member struct {
	cluster, status string
}

type aggregateCase struct {
	name     string
	template string
	members  []member
	// want is the aggregated .status as YAML; "" when the result must have
	// none.
	want string
}

func itemsOf(t *testing.T, members []member) []workv1alpha1.AggregatedStatusItem {
	t.Helper()
	var items []workv1alpha1.AggregatedStatusItem
	for _, m := range members {
		item := workv1alpha1.AggregatedStatusItem{ClusterName: m.cluster}
		if m.status != "" {
			raw, err := yaml.YAMLToJSON([]byte(m.status))
			if err != nil {
				t.Fatal(err)
			}
			item.Status, item.Applied, item.Health = &runtime.RawExtension{Raw: raw}, true, workv1alpha1.ResourceHealthy
		}
		items = append(items, item)
	}
	return items
}

// checkAggregate runs AggregateStatus for each case and checks the result
// is the template, unchanged but for the status wanted, and that the
// template given is left as it was.
func checkAggregate(t *testing.T, tests []aggregateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := fromAPI(t, tt.template)
			before := template.DeepCopy()
			got, ok, err := AggregateStatus(template, itemsOf(t, tt.members))
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Fatal("AggregateStatus: not aggregated")
			}
			if diff := cmp.Diff(before.Object, template.Object); diff != "" {
				t.Errorf("AggregateStatus changed the template (-before +after):\n%s", diff)
			}
			rest, gotRest := before.DeepCopy(), got.DeepCopy()
			delete(rest.Object, "status")
			delete(gotRest.Object, "status")
			if diff := cmp.Diff(rest.Object, gotRest.Object); diff != "" {
				t.Errorf("AggregateStatus changed more than the status (-template +aggregated):\n%s", diff)
			}
			status, found := got.Object["status"]
			if tt.want == "" {
				if found {
					t.Fatalf("aggregated status = %v, want none", status)
				}
				return
			}
			raw, err := json.Marshal(status)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonOf(t, []byte(tt.want)), jsonOf(t, raw)); diff != "" {
				t.Errorf("aggregated status (-want +got):\n%s", diff)
			}
		})
	}
}

const deploymentTemplate = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 5}
spec: {replicas: 6}
status: {observedGeneration: 4, replicas: 1, conditions: [{type: Available, status: "True", reason: MinimumReplicasAvailable, message: ok, lastUpdateTime: "2025-01-01T00:00:00Z", lastTransitionTime: "2025-01-01T00:00:00Z"}]}
`

// deploymentCondition is the condition of deploymentTemplate, as kept.
const deploymentCondition = `[{type: Available, status: "True", reason: MinimumReplicasAvailable, message: ok, lastUpdateTime: "2025-01-01T00:00:00Z", lastTransitionTime: "2025-01-01T00:00:00Z"}]`

func TestAggregateStatusSumsDeploymentCountsOverMembers(t *testing.T) {
	checkAggregate(t, []aggregateCase{
		{
			name:     "every member has observed its generation: the template's generation is observed",
			template: deploymentTemplate,
			members: []member{
				{"a", "{generation: 2, observedGeneration: 2, replicas: 4, updatedReplicas: 4, readyReplicas: 3, availableReplicas: 3, unavailableReplicas: 1}"},
				{"b", "{generation: 7, observedGeneration: 7, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}"},
			},
			want: "{observedGeneration: 5, replicas: 6, updatedReplicas: 6, readyReplicas: 5, availableReplicas: 5, unavailableReplicas: 1, conditions: " + deploymentCondition + "}",
		},
		{
			name:     "a member has not observed its generation: observedGeneration stays",
			template: deploymentTemplate,
			members: []member{
				{"a", "{generation: 2, observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}"},
				{"b", "{generation: 3, observedGeneration: 2, replicas: 3, updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3}"},
			},
			want: "{observedGeneration: 4, replicas: 6, updatedReplicas: 4, readyReplicas: 6, availableReplicas: 6, conditions: " + deploymentCondition + "}",
		},
		{
			name:     "a member not applied yet: the others summed, observedGeneration stays",
			template: deploymentTemplate,
			members: []member{
				{"a", "{generation: 2, observedGeneration: 2, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}"},
				{"b", ""},
			},
			want: "{observedGeneration: 4, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, conditions: " + deploymentCondition + "}",
		},
		{
			name:     "a member rendered from an older template generation: observedGeneration stays",
			template: deploymentTemplate,
			members: []member{
				{"a", "{generation: 2, resourceTemplateGeneration: 5, observedGeneration: 2, replicas: 3}"},
				{"b", "{generation: 2, resourceTemplateGeneration: 4, observedGeneration: 2, replicas: 3}"},
			},
			want: "{observedGeneration: 4, replicas: 6, conditions: " + deploymentCondition + "}",
		},
		{
			name:     "every member rendered from the template's generation: observed",
			template: deploymentTemplate,
			members: []member{
				{"a", "{generation: 2, resourceTemplateGeneration: 5, observedGeneration: 2, replicas: 3}"},
				{"b", "{generation: 1, resourceTemplateGeneration: 6, observedGeneration: 1, replicas: 3}"},
			},
			want: "{observedGeneration: 5, replicas: 6, conditions: " + deploymentCondition + "}",
		},
		{
			name:     "no members: zero counts, the template's generation observed",
			template: deploymentTemplate,
			want:     "{observedGeneration: 5, conditions: " + deploymentCondition + "}",
		},
		{
			name:     "a template without a status",
			template: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, generation: 1}\nspec: {replicas: 2}",
			members:  []member{{"a", "{generation: 1, observedGeneration: 1, replicas: 2, readyReplicas: 2}"}},
			want:     "{observedGeneration: 1, replicas: 2, readyReplicas: 2}",
		},
	})
}

func TestAggregateStatusOfReflectedDeploymentStatuses(t *testing.T) {
	var items []workv1alpha1.AggregatedStatusItem
	for i, manifest := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, generation: 2}\nstatus: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2, conditions: [{type: Progressing, status: \"True\"}]}",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, generation: 1}\nstatus: {observedGeneration: 1, replicas: 4, updatedReplicas: 4, readyReplicas: 1, availableReplicas: 1, unavailableReplicas: 3}",
	} {
		status, err := ReflectStatus(fromAPI(t, manifest))
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, workv1alpha1.AggregatedStatusItem{ClusterName: string(rune('a' + i)), Status: status, Applied: true})
	}
	got, ok, err := AggregateStatus(fromAPI(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, generation: 3}\nspec: {replicas: 6}"), items)
	if err != nil || !ok {
		t.Fatalf("AggregateStatus: ok %v, %v", ok, err)
	}
	raw, _ := json.Marshal(got.Object["status"])
	want := "{observedGeneration: 3, replicas: 6, updatedReplicas: 6, readyReplicas: 3, availableReplicas: 3, unavailableReplicas: 3}"
	if diff := cmp.Diff(jsonOf(t, []byte(want)), jsonOf(t, raw)); diff != "" {
		t.Errorf("aggregated status (-want +got):\n%s", diff)
	}
}

func TestAggregateStatusSumsStatefulSetCountsOverMembers(t *testing.T) {
	template := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 3}
spec: {replicas: 5}
status: {observedGeneration: 2, replicas: 5, currentRevision: db-1, updateRevision: db-2}`
	checkAggregate(t, []aggregateCase{
		{
			name:     "every member has observed its generation",
			template: template,
			members: []member{
				{"a", "{generation: 1, observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 2}"},
				{"b", "{generation: 4, observedGeneration: 4, replicas: 2, readyReplicas: 1, currentReplicas: 2, updatedReplicas: 2, availableReplicas: 1}"},
			},
			want: "{observedGeneration: 3, replicas: 5, readyReplicas: 4, currentReplicas: 5, updatedReplicas: 5, availableReplicas: 3, currentRevision: db-1, updateRevision: db-2}",
		},
		{
			name:     "a member has not",
			template: template,
			members: []member{
				{"a", "{generation: 2, observedGeneration: 1, replicas: 3, readyReplicas: 3}"},
				{"b", "{generation: 1, observedGeneration: 1, replicas: 2, readyReplicas: 2}"},
			},
			want: "{observedGeneration: 2, replicas: 5, readyReplicas: 5, availableReplicas: 0, currentRevision: db-1, updateRevision: db-2}",
		},
		{
			name:     "no member reported yet",
			template: template,
			members:  []member{{"a", ""}, {"b", ""}},
			want:     "{observedGeneration: 2, replicas: 0, availableReplicas: 0, currentRevision: db-1, updateRevision: db-2}",
		},
	})
}

func TestAggregateStatusSumsReplicaSetCountsOverMembers(t *testing.T) {
	checkAggregate(t, []aggregateCase{
		{
			name:     "counts summed, fullyLabeledReplicas kept, generation observed",
			template: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r, generation: 2}\nspec: {replicas: 4}\nstatus: {replicas: 1, fullyLabeledReplicas: 1}",
			members: []member{
				{"a", "{generation: 1, observedGeneration: 1, replicas: 2, readyReplicas: 2, availableReplicas: 1}"},
				{"b", "{generation: 1, observedGeneration: 1, replicas: 2, readyReplicas: 1, availableReplicas: 1}"},
			},
			want: "{observedGeneration: 2, replicas: 4, fullyLabeledReplicas: 1, readyReplicas: 3, availableReplicas: 2}",
		},
	})
}

func TestAggregateStatusSumsDaemonSetNodeCountsOverMembers(t *testing.T) {
	template := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, generation: 2}\nstatus: {observedGeneration: 1, currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0, collisionCount: 1}"
	checkAggregate(t, []aggregateCase{
		{
			name:     "every member has observed its generation",
			template: template,
			members: []member{
				{"a", "{generation: 3, observedGeneration: 3, currentNumberScheduled: 3, numberMisscheduled: 1, desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3, numberAvailable: 3}"},
				{"b", "{generation: 1, observedGeneration: 1, currentNumberScheduled: 2, desiredNumberScheduled: 2, numberReady: 1, updatedNumberScheduled: 1, numberAvailable: 1, numberUnavailable: 1}"},
			},
			want: "{observedGeneration: 2, currentNumberScheduled: 5, numberMisscheduled: 1, desiredNumberScheduled: 5, numberReady: 4, updatedNumberScheduled: 4, numberAvailable: 4, numberUnavailable: 1, collisionCount: 1}",
		},
		{
			name:     "a member not applied yet",
			template: template,
			members: []member{
				{"a", "{generation: 3, observedGeneration: 3, currentNumberScheduled: 3, desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3, numberAvailable: 3}"},
				{"b", ""},
			},
			want: "{observedGeneration: 1, currentNumberScheduled: 3, numberMisscheduled: 0, desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3, numberAvailable: 3, collisionCount: 1}",
		},
	})
}

const jobTemplate = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: batch, generation: 1}\nspec: {parallelism: 4}\n"

func TestAggregateStatusFoldsJobProgressAndCompletion(t *testing.T) {
	const (
		completeAt10 = `{type: Complete, status: "True", lastProbeTime: "2025-01-01T10:10:00Z", lastTransitionTime: "2025-01-01T10:10:00Z"}`
		completeAt12 = `{type: Complete, status: "True", lastProbeTime: "2025-01-01T10:12:00Z", lastTransitionTime: "2025-01-01T10:12:00Z"}`
		metAt09      = `{type: SuccessCriteriaMet, status: "True", lastTransitionTime: "2025-01-01T10:09:00Z"}`
		metAt11      = `{type: SuccessCriteriaMet, status: "True", lastTransitionTime: "2025-01-01T10:11:00Z"}`
	)
	checkAggregate(t, []aggregateCase{
		{
			name:     "running in every member: counts summed, the earliest start",
			template: jobTemplate,
			members: []member{
				{"a", `{active: 2, succeeded: 1, startTime: "2025-01-01T10:02:00Z"}`},
				{"b", `{active: 1, failed: 1, startTime: "2025-01-01T10:00:00Z"}`},
			},
			want: `{active: 3, succeeded: 1, failed: 1, startTime: "2025-01-01T10:00:00Z"}`,
		},
		{
			name:     "started in one member only: no start time yet",
			template: jobTemplate,
			members: []member{
				{"a", `{active: 2, startTime: "2025-01-01T10:02:00Z"}`},
				{"b", `{}`},
			},
			want: `{active: 2}`,
		},
		{
			name:     "a start time once set is kept",
			template: jobTemplate + `status: {startTime: "2025-01-01T09:00:00Z"}`,
			members: []member{
				{"a", `{active: 2, startTime: "2025-01-01T10:02:00Z"}`},
			},
			want: `{active: 2, startTime: "2025-01-01T09:00:00Z"}`,
		},
		{
			name:     "complete in every member: Complete at the last member's time, the last completion time",
			template: jobTemplate,
			members: []member{
				{"a", `{succeeded: 2, startTime: "2025-01-01T10:00:00Z", completionTime: "2025-01-01T10:10:00Z", conditions: [` + metAt09 + `, ` + completeAt10 + `]}`},
				{"b", `{succeeded: 2, startTime: "2025-01-01T10:01:00Z", completionTime: "2025-01-01T10:12:00Z", conditions: [` + metAt11 + `, ` + completeAt12 + `]}`},
			},
			want: `{succeeded: 4, startTime: "2025-01-01T10:00:00Z", completionTime: "2025-01-01T10:12:00Z", conditions: [
  {type: Complete, status: "True", reason: Completed, message: Job completed, lastProbeTime: "2025-01-01T10:12:00Z", lastTransitionTime: "2025-01-01T10:12:00Z"},
  {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: All member clusters have met success criteria, lastProbeTime: "2025-01-01T10:11:00Z", lastTransitionTime: "2025-01-01T10:11:00Z"}]}`,
		},
		{
			name:     "complete in every member, success criteria not reported by one: Complete only",
			template: jobTemplate,
			members: []member{
				{"a", `{succeeded: 2, completionTime: "2025-01-01T10:10:00Z", conditions: [` + metAt09 + `, ` + completeAt10 + `]}`},
				{"b", `{succeeded: 2, completionTime: "2025-01-01T10:12:00Z", conditions: [` + completeAt12 + `]}`},
			},
			want: `{succeeded: 4, completionTime: "2025-01-01T10:12:00Z", conditions: [
  {type: Complete, status: "True", reason: Completed, message: Job completed, lastProbeTime: "2025-01-01T10:12:00Z", lastTransitionTime: "2025-01-01T10:12:00Z"}]}`,
		},
		{
			name:     "complete in one member, not yet applied to the other: not complete",
			template: jobTemplate,
			members: []member{
				{"a", `{succeeded: 2, completionTime: "2025-01-01T10:10:00Z", conditions: [` + completeAt10 + `]}`},
				{"b", ""},
			},
			want: `{succeeded: 2}`,
		},
		{
			name:     "failed in a member: Failed naming it, at its time",
			template: jobTemplate,
			members: []member{
				{"a", `{active: 1}`},
				{"b", `{failed: 6, conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, lastProbeTime: "2025-01-01T10:03:00Z", lastTransitionTime: "2025-01-01T10:03:00Z"}]}`},
				{"c", `{failed: 6, conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, lastTransitionTime: "2025-01-01T10:01:00Z"}]}`},
			},
			want: `{active: 1, failed: 12, conditions: [
  {type: Failed, status: "True", reason: JobFailed, message: "Job executed failed in member clusters b,c", lastProbeTime: "2025-01-01T10:03:00Z", lastTransitionTime: "2025-01-01T10:03:00Z"}]}`,
		},
		{
			name:     "a template already finished is left as it is",
			template: jobTemplate + `status: {succeeded: 4, conditions: [{type: Complete, status: "True"}]}`,
			members:  []member{{"a", `{active: 3}`}},
			want:     `{succeeded: 4, conditions: [{type: Complete, status: "True"}]}`,
		},
		{
			name:     "no member reported yet: an empty status",
			template: jobTemplate,
			members:  []member{{"a", ""}},
			want:     `{}`,
		},
	})
}

func TestAggregateStatusCollectsCronJobActiveJobsAndLatestTimes(t *testing.T) {
	checkAggregate(t, []aggregateCase{
		{
			name:     "active Jobs of every member, the latest times",
			template: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec: {schedule: \"0 0 * * *\"}",
			members: []member{
				{"a", `{active: [{kind: Job, namespace: ops, name: nightly-1}], lastScheduleTime: "2025-01-02T00:00:00Z", lastSuccessfulTime: "2025-01-01T00:05:00Z"}`},
				{"b", ""},
				{"c", `{active: [{kind: Job, namespace: ops, name: nightly-2}], lastScheduleTime: "2025-01-01T00:00:00Z", lastSuccessfulTime: "2025-01-01T00:09:00Z"}`},
			},
			want: `{active: [{kind: Job, namespace: ops, name: nightly-1}, {kind: Job, namespace: ops, name: nightly-2}], lastScheduleTime: "2025-01-02T00:00:00Z", lastSuccessfulTime: "2025-01-01T00:09:00Z"}`,
		},
		{
			name:     "never scheduled anywhere",
			template: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec: {schedule: \"0 0 * * *\"}",
			members:  []member{{"a", "{}"}},
			want:     `{}`,
		},
	})
}

func TestAggregateStatusPicksTheWorstPodPhase(t *testing.T) {
	const template = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: app, image: nginx}]}\n"
	// A container status as Karmada writes it: ready and state only.
	const running = `{name: "", image: "", imageID: "", restartCount: 0, lastState: {}, ready: true, state: {running: {startedAt: "2025-01-01T00:00:00Z"}}}`
	reported := func(phase string) string {
		return `{phase: ` + phase + `, podIP: 10.0.0.1, containerStatuses: [{name: app, image: nginx, imageID: x, restartCount: 2, ready: true, state: {running: {startedAt: "2025-01-01T00:00:00Z"}}}]}`
	}
	checkAggregate(t, []aggregateCase{
		{
			name:     "Running everywhere: Running, every member's container statuses",
			template: template,
			members:  []member{{"a", reported("Running")}, {"b", reported("Running")}},
			want:     `{phase: Running, containerStatuses: [` + running + `, ` + running + `]}`,
		},
		{
			name:     "Failed anywhere: Failed",
			template: template,
			members:  []member{{"a", `{phase: Failed}`}, {"b", `{phase: Pending}`}, {"c", reported("Running")}},
			want:     `{phase: Failed, containerStatuses: [` + running + `]}`,
		},
		{
			name:     "a member not reported counts as Pending",
			template: template,
			members:  []member{{"a", `{phase: Succeeded}`}, {"b", ""}},
			want:     `{phase: Pending}`,
		},
		{
			name:     "Running and Succeeded: Running",
			template: template,
			members:  []member{{"a", `{phase: Succeeded}`}, {"b", `{phase: Running}`}},
			want:     `{phase: Running}`,
		},
		{
			name:     "Succeeded everywhere: Succeeded, init container statuses kept",
			template: template,
			members:  []member{{"a", `{phase: Succeeded, initContainerStatuses: [{name: init, ready: false, state: {terminated: {exitCode: 0, startedAt: null, finishedAt: null}}}]}`}},
			want:     `{phase: Succeeded, initContainerStatuses: [{name: "", image: "", imageID: "", restartCount: 0, lastState: {}, ready: false, state: {terminated: {exitCode: 0, startedAt: null, finishedAt: null}}}]}`,
		},
		{
			name:     "Unknown only: no phase",
			template: template,
			members:  []member{{"a", `{phase: Unknown}`}},
			want:     `{}`,
		},
		{
			name:     "no members: the template as it is",
			template: template + "status: {phase: Pending}",
			want:     `{phase: Pending}`,
		},
	})
}

func TestAggregateStatusMergesLoadBalancerIngressOfServicesAndIngresses(t *testing.T) {
	checkAggregate(t, []aggregateCase{
		{
			name:     "LoadBalancer Service: every member's ingress, deduplicated and sorted, ports merged",
			template: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}\nstatus: {conditions: [{type: X, status: \"True\", reason: R, message: m, lastTransitionTime: \"2025-01-01T00:00:00Z\"}]}",
			members: []member{
				{"a", `{loadBalancer: {ingress: [{ip: 192.0.2.9}, {hostname: b.example.com, ports: [{port: 443, protocol: TCP}]}]}}`},
				{"b", ""},
				{"c", `{loadBalancer: {ingress: [{ip: 192.0.2.1, ipMode: Proxy}, {hostname: b.example.com, ports: [{port: 80, protocol: TCP}, {port: 443, protocol: TCP}]}, {hostname: a.example.com}]}}`},
				{"d", `{loadBalancer: {ingress: [{ip: 192.0.2.1}]}}`},
			},
			want: `{loadBalancer: {ingress: [
  {hostname: a.example.com},
  {hostname: b.example.com, ports: [{port: 80, protocol: TCP}, {port: 443, protocol: TCP}]},
  {ip: 192.0.2.1, ipMode: Proxy},
  {ip: 192.0.2.1},
  {ip: 192.0.2.9}]}}`,
		},
		{
			name:     "LoadBalancer Service not provisioned anywhere",
			template: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}",
			members:  []member{{"a", `{loadBalancer: {}}`}},
			want:     `{loadBalancer: {}}`,
		},
		{
			name:     "ClusterIP Service: left as it is",
			template: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: ClusterIP}",
			members:  []member{{"a", `{loadBalancer: {ingress: [{ip: 192.0.2.1}]}}`}},
			want:     "",
		},
		{
			name:     "Ingress: every member's addresses, deduplicated and sorted, ports merged",
			template: "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec: {rules: [{host: shop.example.com}]}",
			members: []member{
				{"a", `{loadBalancer: {ingress: [{ip: 192.0.2.2, ports: [{port: 443, protocol: TCP, error: "x"}]}]}}`},
				{"b", `{loadBalancer: {ingress: [{hostname: lb.example.com}, {ip: 192.0.2.2, ports: [{port: 443, protocol: TCP}]}]}}`},
			},
			want: `{loadBalancer: {ingress: [{hostname: lb.example.com}, {ip: 192.0.2.2, ports: [{port: 443, protocol: TCP}, {port: 443, protocol: TCP, error: "x"}]}]}}`,
		},
	})
}

func TestAggregateStatusPicksTheWorstVolumePhase(t *testing.T) {
	const pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {accessModes: [ReadWriteOnce]}\n"
	const pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: vol}\nspec: {capacity: {storage: 1Gi}}\n"
	checkAggregate(t, []aggregateCase{
		{
			name:     "PersistentVolumeClaim Bound everywhere: Bound, only the phase",
			template: pvc,
			members:  []member{{"a", "{phase: Bound, capacity: {storage: 1Gi}}"}, {"b", "{phase: Bound}"}},
			want:     "{phase: Bound}",
		},
		{
			name:     "PersistentVolumeClaim Pending in a member: Pending",
			template: pvc,
			members:  []member{{"a", "{phase: Bound}"}, {"b", "{phase: Pending}"}},
			want:     "{phase: Pending}",
		},
		{
			name:     "PersistentVolumeClaim Lost in a member: Lost",
			template: pvc,
			members:  []member{{"a", "{phase: Lost}"}, {"b", "{phase: Pending}"}},
			want:     "{phase: Lost}",
		},
		{
			name:     "PersistentVolumeClaim not reported by a member: Pending",
			template: pvc,
			members:  []member{{"a", "{phase: Bound}"}, {"b", ""}},
			want:     "{phase: Pending}",
		},
		{
			name:     "PersistentVolume: Failed before Pending before Available before Bound before Released",
			template: pv,
			members:  []member{{"a", "{phase: Released}"}, {"b", "{phase: Bound}"}, {"c", "{phase: Available}"}},
			want:     "{phase: Available}",
		},
		{
			name:     "PersistentVolume not reported by a member: Pending",
			template: pv,
			members:  []member{{"a", "{phase: Bound}"}, {"b", ""}},
			want:     "{phase: Pending}",
		},
		{
			name:     "PersistentVolume Failed in a member: Failed",
			template: pv,
			members:  []member{{"a", "{phase: Failed}"}, {"b", ""}},
			want:     "{phase: Failed}",
		},
	})
}

func TestAggregateStatusSumsDisruptionBudgetsAndAutoscalers(t *testing.T) {
	checkAggregate(t, []aggregateCase{
		{
			name:     "PodDisruptionBudget: counts summed, disrupted Pods named member/pod",
			template: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: 1}\nstatus: {observedGeneration: 1, currentHealthy: 9, desiredHealthy: 9, expectedPods: 9, disruptionsAllowed: 9}",
			members: []member{
				{"a", `{currentHealthy: 2, desiredHealthy: 1, expectedPods: 2, disruptionsAllowed: 1, disruptedPods: {web-1: "2025-01-01T00:00:00Z"}}`},
				{"b", ""},
				{"c", `{currentHealthy: 1, desiredHealthy: 1, expectedPods: 1, disruptionsAllowed: 0}`},
			},
			want: `{currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptionsAllowed: 1, disruptedPods: {a/web-1: "2025-01-01T00:00:00Z"}}`,
		},
		{
			name:     "HorizontalPodAutoscaler v2: replicas summed, the rest dropped",
			template: "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {maxReplicas: 10}\nstatus: {desiredReplicas: 1, conditions: [{type: AbleToScale, status: \"True\"}]}",
			members: []member{
				{"a", "{currentReplicas: 2, desiredReplicas: 3}"},
				{"b", "{currentReplicas: 4, desiredReplicas: 4}"},
				{"c", ""},
			},
			want: "{currentReplicas: 6, desiredReplicas: 7}",
		},
		{
			name:     "HorizontalPodAutoscaler v1 not reported anywhere",
			template: "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {maxReplicas: 10}",
			members:  []member{{"a", ""}},
			want:     "{currentReplicas: 0, desiredReplicas: 0}",
		},
	})
}

func TestAggregateStatusLeavesOtherKindsToTheCaller(t *testing.T) {
	for _, manifest := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nstatus: {phase: Old}",
		"apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc}\nspec: {replicas: 1}",
		"apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: i}",
	} {
		template := fromAPI(t, manifest)
		before := template.DeepCopy()
		got, ok, err := AggregateStatus(template, itemsOf(t, []member{{"a", "{phase: New}"}}))
		if err != nil || ok {
			t.Errorf("%s: AggregateStatus ok %v, %v; want not aggregated", template.GetKind(), ok, err)
		}
		if got != template || cmp.Diff(before.Object, got.Object) != "" {
			t.Errorf("%s: AggregateStatus did not return the template unchanged: %v", template.GetKind(), got.Object)
		}
	}
}

func TestAggregateStatusNamesTheMemberWhoseStatusCannotBeRead(t *testing.T) {
	items := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "good", Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1}`)}},
		{ClusterName: "bad", Status: &runtime.RawExtension{Raw: []byte(`{"replicas":"many"}`)}},
	}
	got, ok, err := AggregateStatus(fromAPI(t, deploymentTemplate), items)
	if err == nil || !strings.Contains(err.Error(), "in member bad") || got != nil || !ok {
		t.Fatalf("AggregateStatus = %v, %v, %v; want an error naming member bad", got, ok, err)
	}
}

func TestAggregateStatusTreatsAnEmptyRawStatusAsNotReported(t *testing.T) {
	items := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "a", Status: &runtime.RawExtension{}},
		{ClusterName: "b", Status: &runtime.RawExtension{Raw: []byte("null")}},
	}
	got, ok, err := AggregateStatus(fromAPI(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}"), items)
	if err != nil || !ok {
		t.Fatalf("AggregateStatus: ok %v, %v", ok, err)
	}
	if phase := got.Object["status"].(map[string]any)["phase"]; phase != "Pending" {
		t.Errorf("phase = %v, want Pending", phase)
	}
}
