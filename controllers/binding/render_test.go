package binding

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestStripRemovesWhatTheHubSet(t *testing.T) {
	tests := []struct {
		name, hub, want string
	}{
		{
			name: "server-set metadata, status, the claim and hub controllers' annotations go; the user's labels and annotations stay",
			hub: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: fleet
  uid: 0b6c
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2025-01-01T00:00:00Z"
  managedFields: [{manager: kubectl}]
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: x, uid: "1"}]
  finalizers: [example.com/hold]
  labels: {app: web, propagationpolicy.flotilla.io/permanent-id: 9f1e}
  annotations:
    note: kept
    propagationpolicy.flotilla.io/name: web
    propagationpolicy.flotilla.io/namespace: fleet
    deployment.kubernetes.io/revision: "2"
    kubectl.kubernetes.io/last-applied-configuration: "{}"
spec: {replicas: 6}
status: {readyReplicas: 6}
`,
			want: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: fleet
  labels: {app: web}
  annotations: {note: kept}
spec: {replicas: 6}
`,
		},
		{
			name: "a Service loses the cluster IPs and node ports the hub allocated",
			hub: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: fleet}
spec:
  type: ClusterIP
  clusterIP: 10.0.0.12
  clusterIPs: [10.0.0.12]
  healthCheckNodePort: 30001
  ports: [{port: 80, nodePort: 30080}]
`,
			want: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: fleet}
spec:
  type: ClusterIP
  ports: [{port: 80}]
`,
		},
		{
			name: "a headless Service keeps clusterIP None",
			hub: `
apiVersion: v1
kind: Service
metadata: {name: db, namespace: fleet}
spec: {clusterIP: None, clusterIPs: [None], ports: [{port: 5432}]}
`,
			want: `
apiVersion: v1
kind: Service
metadata: {name: db, namespace: fleet}
spec: {clusterIP: None, clusterIPs: [None], ports: [{port: 5432}]}
`,
		},
		{
			name: "a Job loses the selector and template labels generated from the hub Job's UID",
			hub: `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: fleet}
spec:
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: 77aa}}
  template:
    metadata:
      labels: {app: once, controller-uid: 77aa, batch.kubernetes.io/controller-uid: 77aa, job-name: once, batch.kubernetes.io/job-name: once}
`,
			want: `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: fleet}
spec:
  template:
    metadata:
      labels: {app: once}
`,
		},
		{
			name: "a Job with a manual selector keeps it",
			hub: `
apiVersion: batch/v1
kind: Job
metadata: {name: manual, namespace: fleet}
spec:
  manualSelector: true
  selector: {matchLabels: {app: manual}}
  template: {metadata: {labels: {app: manual}}}
`,
			want: `
apiVersion: batch/v1
kind: Job
metadata: {name: manual, namespace: fleet}
spec:
  manualSelector: true
  selector: {matchLabels: {app: manual}}
  template: {metadata: {labels: {app: manual}}}
`,
		},
		{
			name: "a ServiceAccount loses the hub's token Secrets",
			hub: `
apiVersion: v1
kind: ServiceAccount
metadata: {name: web, namespace: fleet}
secrets: [{name: web-token-abcde}]
imagePullSecrets: [{name: registry}]
`,
			want: `
apiVersion: v1
kind: ServiceAccount
metadata: {name: web, namespace: fleet}
imagePullSecrets: [{name: registry}]
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := object(t, tt.hub)
			before := hub.DeepCopy()
			got := Strip(hub)
			if diff := cmp.Diff(object(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("Strip (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, hub.Object); diff != "" {
				t.Errorf("Strip changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestWorkNameIsReadableUniqueAndFits(t *testing.T) {
	tests := []struct {
		kind, namespace, name, want string
	}{
		{KindResourceBinding, "fleet", "web-deployment", "fleet.web-deployment-"},
		{KindClusterResourceBinding, "", "reader-clusterrole", "reader-clusterrole-"},
	}
	for _, tt := range tests {
		got := WorkName(tt.kind, tt.namespace, tt.name)
		if !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+8 {
			t.Errorf("WorkName(%s, %q, %q) = %q, want %q and 8 hex digits", tt.kind, tt.namespace, tt.name, got, tt.want)
		}
		if again := WorkName(tt.kind, tt.namespace, tt.name); again != got {
			t.Errorf("WorkName is not stable: %q then %q", got, again)
		}
	}
	// Names that concatenate alike still differ.
	if a, b := WorkName(KindResourceBinding, "a", "b.c"), WorkName(KindClusterResourceBinding, "", "a.b.c"); a == b {
		t.Errorf("ResourceBinding a/b.c and ClusterResourceBinding a.b.c share Work name %q", a)
	}
	long := WorkName(KindResourceBinding, strings.Repeat("n", 63), strings.Repeat("x", 253))
	if len(long) != 253 {
		t.Errorf("WorkName of the longest names has %d characters, want 253", len(long))
	}
}

func TestEventNoteFitsTheEventsAPI(t *testing.T) {
	long := strings.Repeat("é", 700) // 1400 bytes
	tests := []struct {
		name, message string
		wantWhole     bool
	}{
		{"a short message is kept whole", "member m1: v1 Namespace x is not rendered", true},
		{"a message of exactly the limit is kept whole", strings.Repeat("a", maxEventNote), true},
		{"a long message is cut on a rune boundary and says where the rest is", long, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := eventNote(tt.message)
			if len(got) > maxEventNote {
				t.Fatalf("note of %d bytes, the API accepts %d", len(got), maxEventNote)
			}
			if tt.wantWhole != (got == tt.message) {
				t.Fatalf("eventNote(%d bytes) = %d bytes, whole %t", len(tt.message), len(got), tt.wantWhole)
			}
			if !utf8.ValidString(got) {
				t.Errorf("note is not valid UTF-8")
			}
			if !tt.wantWhole && !strings.HasSuffix(got, "(the binding's Rendered condition has the rest)") {
				t.Errorf("note %q does not point to the condition", got[len(got)-60:])
			}
		})
	}
}
