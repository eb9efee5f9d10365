package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("decode manifest: %v", err)
	}
	return u
}

func quantities(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestGetReplicasReadsReplicasAndWhatOneReplicaNeeds(t *testing.T) {
	tests := []struct {
		name         string
		manifest     string
		wantReplicas int32
		want         *workv1alpha1.ReplicaRequirements
	}{
		{
			name: "Deployment: spec.replicas, requests summed over containers, limits, priority class",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: fleet}
spec:
  replicas: 6
  template:
    spec:
      priorityClassName: high
      containers:
      - name: a
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m}}
      - name: b
        resources: {requests: {cpu: 50m}}
`,
			wantReplicas: 6,
			want: &workv1alpha1.ReplicaRequirements{
				Namespace:         "fleet",
				PriorityClassName: "high",
				ResourceRequest:   quantities("cpu", "150m", "memory", "64Mi"),
				ResourceLimits:    quantities("cpu", "200m"),
			},
		},
		{
			name: "StatefulSet without replicas defaults to 1; an init container larger than the containers sets the request",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: fleet}
spec:
  template:
    spec:
      initContainers:
      - name: init
        resources: {requests: {cpu: "1"}}
      containers:
      - name: db
        resources: {requests: {cpu: 250m}}
`,
			wantReplicas: 1,
			want: &workv1alpha1.ReplicaRequirements{
				Namespace:       "fleet",
				ResourceRequest: quantities("cpu", "1"),
			},
		},
		{
			name: "ReplicaSet: node selector, tolerations and required node affinity become the node claim",
			manifest: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: fleet}
spec:
  replicas: 3
  template:
    spec:
      nodeSelector: {disk: ssd}
      tolerations:
      - {key: gpu, operator: Exists, effect: NoSchedule}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: zone, operator: In, values: [a]}
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 1
            preference:
              matchExpressions:
              - {key: rack, operator: In, values: ["1"]}
      containers:
      - name: c
`,
			wantReplicas: 3,
			want: &workv1alpha1.ReplicaRequirements{
				Namespace: "fleet",
				NodeClaim: &workv1alpha1.NodeClaim{
					NodeSelector: map[string]string{"disk": "ssd"},
					Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
					}}},
				},
			},
		},
		{
			name: "Job: parallelism, and pod overhead is part of the request",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: fleet}
spec:
  parallelism: 4
  completions: 10
  template:
    spec:
      overhead: {cpu: 10m}
      containers:
      - name: c
        resources: {requests: {cpu: 90m}}
`,
			wantReplicas: 4,
			want: &workv1alpha1.ReplicaRequirements{
				Namespace:       "fleet",
				ResourceRequest: quantities("cpu", "100m"),
			},
		},
		{
			name: "Job without parallelism defaults to 1",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: fleet}
spec:
  template:
    spec:
      containers: [{name: c}]
`,
			wantReplicas: 1,
			want:         &workv1alpha1.ReplicaRequirements{Namespace: "fleet"},
		},
		{
			name: "a ConfigMap has no replicas and no requirements",
			manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: fleet}
data: {replicas: "3"}
`,
			wantReplicas: 0,
			want:         nil,
		},
		{
			name: "a kind of another group with a spec.replicas field has no replicas either",
			manifest: `
apiVersion: example.com/v1
kind: Deployment
metadata: {name: x, namespace: fleet}
spec: {replicas: 5}
`,
			wantReplicas: 0,
			want:         nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replicas, req, err := GetReplicas(object(t, tt.manifest))
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if replicas != tt.wantReplicas {
				t.Errorf("replicas = %d, want %d", replicas, tt.wantReplicas)
			}
			if diff := cmp.Diff(tt.want, req, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetReplicasReportsATemplateThatDoesNotDecodeAsItsKind(t *testing.T) {
	_, _, err := GetReplicas(object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec: {replicas: "six"}
`))
	if err == nil {
		t.Fatal("Extract accepted spec.replicas: \"six\"")
	}
}

func TestReviseReplicaWritesTheMemberShareIntoTheKindsReplicaField(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		replicas int32
		wantSet  bool
		path     []string
	}{
		{"Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 6}", 4, true, []string{"spec", "replicas"}},
		{"StatefulSet without replicas", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {}", 2, true, []string{"spec", "replicas"}},
		{"ReplicaSet to zero", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: r}\nspec: {replicas: 1}", 0, true, []string{"spec", "replicas"}},
		{"Job parallelism", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 5, completions: 5}", 3, true, []string{"spec", "parallelism"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.manifest)
			set, err := ReviseReplica(obj, tt.replicas)
			if err != nil || set != tt.wantSet {
				t.Fatalf("Set = %v, %v; want %v, nil", set, err, tt.wantSet)
			}
			got, found, _ := unstructured.NestedInt64(obj.Object, tt.path...)
			if !found || got != int64(tt.replicas) {
				t.Errorf("%v = %d (found %v), want %d", tt.path, got, found, tt.replicas)
			}
		})
	}
}

func TestReviseReplicaLeavesKindsWithoutReplicasUnchanged(t *testing.T) {
	obj := object(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}")
	before := obj.DeepCopy()
	set, err := ReviseReplica(obj, 4)
	if err != nil || set {
		t.Fatalf("Set = %v, %v; want false, nil", set, err)
	}
	if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
		t.Errorf("Service changed (-before +after):\n%s", diff)
	}
}

func TestPodsCountsThePodsAnObjectMakesInAMember(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		wantN    int64
		wantOK   bool
		wantReq  corev1.ResourceList
	}{
		{"Deployment: spec.replicas × its pod template", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 3, template: {spec: {containers: [{name: a, resources: {requests: {cpu: "2"}}}]}}}
`, 3, true, quantities("cpu", "2")},
		{"Job: parallelism", `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec: {parallelism: 4, template: {spec: {containers: [{name: a, resources: {requests: {cpu: 100m}}}]}}}
`, 4, true, quantities("cpu", "100m")},
		{"Pod: one, its own requests (init containers as a maximum)", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: i, resources: {requests: {cpu: "3"}}}]
  containers: [{name: a, resources: {requests: {cpu: "1"}}}]
`, 1, true, quantities("cpu", "3")},
		{"ReplicationController: spec.replicas", `
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec: {replicas: 2, template: {spec: {containers: [{name: a, resources: {requests: {memory: 1Gi}}}]}}}
`, 2, true, quantities("memory", "1Gi")},
		{"DaemonSet: not countable from the object", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec: {template: {spec: {containers: [{name: a}]}}}
`, 0, false, nil},
		{"ConfigMap: no Pods", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
`, 0, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, req, ok, err := Pods(object(t, tt.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantN || ok != tt.wantOK {
				t.Fatalf("Pods = %d, %v; want %d, %v", n, ok, tt.wantN, tt.wantOK)
			}
			var got corev1.ResourceList
			if req != nil {
				got = req.ResourceRequest
			}
			if diff := cmp.Diff(tt.wantReq, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
