package luavm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Scripts as Karmada's documentation and its default customization of
// OpenKruise's CloneSet write them.
const (
	getReplicasScript = `
local kube = require("kube")
function GetReplicas(obj)
  replica = obj.spec.replicas
  requirement = kube.accuratePodRequirements(obj.spec.template)
  return replica, requirement
end`
	reviseReplicaScript = `
function ReviseReplica(obj, desiredReplica)
  obj.spec.replicas = desiredReplica
  return obj
end`
	retainScript = `
function Retain(desiredObj, observedObj)
  desiredObj.spec.paused = observedObj.spec.paused
  desiredObj.spec.scaleStrategy = observedObj.spec.scaleStrategy
  return desiredObj
end`
	aggregateStatusScript = `
function AggregateStatus(desiredObj, statusItems)
  if statusItems == nil then
    return desiredObj
  end
  if desiredObj.status == nil then
    desiredObj.status = {}
  end
  replicas = 0
  readyReplicas = 0
  for i = 1, #statusItems do
    if statusItems[i].status ~= nil and statusItems[i].status.replicas ~= nil then
      replicas = replicas + statusItems[i].status.replicas
    end
    if statusItems[i].status ~= nil and statusItems[i].status.readyReplicas ~= nil then
      readyReplicas = readyReplicas + statusItems[i].status.readyReplicas
    end
  end
  desiredObj.status.replicas = replicas
  desiredObj.status.readyReplicas = readyReplicas
  return desiredObj
end`
	interpretHealthScript = `
function InterpretHealth(observedObj)
  if observedObj.status.observedGeneration ~= observedObj.metadata.generation then
    return false
  end
  if observedObj.spec.replicas ~= nil then
    if observedObj.status.updatedReplicas < observedObj.spec.replicas then
      return false
    end
  end
  if observedObj.status.availableReplicas < observedObj.status.updatedReplicas then
    return false
  end
  return true
end`
	reflectStatusScript = `
function ReflectStatus(observedObj)
  local status = {}
  if observedObj == nil or observedObj.status == nil then
    return status
  end
  status.replicas = observedObj.status.replicas
  status.readyReplicas = observedObj.status.readyReplicas
  status.conditions = observedObj.status.conditions
  status.observedGeneration = observedObj.status.observedGeneration
  if observedObj.metadata == nil then
    return status
  end
  status.generation = observedObj.metadata.generation
  if observedObj.metadata.annotations == nil then
    return status
  end
  local resourceTemplateGeneration = tonumber(observedObj.metadata.annotations["resourcetemplate.karmada.io/generation"])
  if resourceTemplateGeneration ~= nil then
      status.resourceTemplateGeneration = resourceTemplateGeneration
  end
  return status
end`
	getDependenciesScript = `
local kube = require("kube")
function GetDependencies(desiredObj)
  refs = kube.getPodDependencies(desiredObj.spec.template, desiredObj.metadata.namespace)
  return refs
end`
)

const cloneSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: web
  namespace: shop
  generation: 4
  labels: {app: web}
  annotations:
    resourcetemplate.karmada.io/generation: "4"
spec:
  replicas: 3
  paused: false
  selector:
    matchLabels: {app: web}
  scaleStrategy: {}
  template:
    metadata:
      labels: {app: web}
    spec:
      serviceAccountName: web
      priorityClassName: high
      nodeSelector: {disk: ssd}
      tolerations:
      - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
      imagePullSecrets:
      - name: registry
      containers:
      - name: web
        image: nginx:1.27
        args: []
        resources:
          requests: {cpu: 250m, memory: 64Mi}
          limits: {cpu: "1", memory: 128Mi}
        env:
        - name: PASSWORD
          valueFrom:
            secretKeyRef: {name: db, key: password}
        envFrom:
        - configMapRef: {name: web-env}
        volumeMounts:
        - {name: config, mountPath: /etc/web}
        - {name: cache, mountPath: /cache}
        - {name: data, mountPath: /data}
      - name: sidecar
        image: proxy:1
        resources:
          limits: {cpu: 500m}
      volumes:
      - name: config
        configMap: {name: web-config}
      - name: cache
        emptyDir: {}
      - name: data
        persistentVolumeClaim: {claimName: web-data}
status:
  replicas: 3
  readyReplicas: 2
  updatedReplicas: 3
  availableReplicas: 3
  observedGeneration: 4
  conditions: []
`

func object(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	// As the API machinery decodes: integers int64.
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: v.(map[string]any)}
}

func cloneSet(t testing.TB) *unstructured.Unstructured { return object(t, cloneSetYAML) }

func testVM() *VM { return New(Limits{Timeout: 5 * time.Second}) }

func mustField(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !ok {
		t.Fatalf("%s: missing (%v)", strings.Join(path, "."), err)
	}
	return v
}

func TestGetReplicasReturnsTheCountAndWhatOneReplicaNeedsAsKarmadaComputesIt(t *testing.T) {
	n, rr, err := testVM().GetReplicas(context.Background(), getReplicasScript, cloneSet(t))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("replicas = %d, want 3", n)
	}
	want := &workv1alpha1.ReplicaRequirements{
		NodeClaim: &workv1alpha1.NodeClaim{
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "web", Effect: "NoSchedule"}},
		},
		// The sidecar's limit stands in for its missing request.
		ResourceRequest:   corev1.ResourceList{"cpu": resource.MustParse("750m"), "memory": resource.MustParse("64Mi")},
		ResourceLimits:    corev1.ResourceList{"cpu": resource.MustParse("1500m"), "memory": resource.MustParse("128Mi")},
		Namespace:         "shop",
		PriorityClassName: "high",
	}
	if d := cmp.Diff(want, rr, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
		t.Errorf("requirements (-want +got):\n%s", d)
	}
}

func TestGetReplicasCases(t *testing.T) {
	cases := []struct {
		name, script string
		wantN        int32
		wantRR       bool
		wantErr      string
	}{
		{"requirements may be nil", `function GetReplicas(obj) return obj.spec.replicas, nil end`, 3, false, ""},
		{"requirements may be left out", `function GetReplicas(obj) return 7 end`, 7, false, ""},
		{"a fractional count is truncated as in Karmada", `function GetReplicas(obj) return 2.7 end`, 2, false, ""},
		{"a script may build requirements itself", `
local kube = require("kube")
function GetReplicas(obj)
  return 1, {resourceRequest = {cpu = kube.getResourceQuantity("1500m"), memory = "1Gi"}}
end`, 1, true, ""},
		{"replicas must be a number", `function GetReplicas(obj) return "3" end`, 0, false, "GetReplicas returned replicas of type string, want a number"},
		{"replicas must not be nil", `function GetReplicas(obj) return obj.spec.missing end`, 0, false, "replicas of type nil"},
		{"replicas must not be negative", `function GetReplicas(obj) return -1 end`, 0, false, "want 0 to"},
		{"requirements must be a table", `function GetReplicas(obj) return 1, "big" end`, 0, false, "requirements of type string"},
		{"requirements must have ReplicaRequirements' types", `function GetReplicas(obj) return 1, {namespace = {1, 2}} end`, 0, false, "not a ReplicaRequirements"},
	}
	vm := testVM()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, rr, err := vm.GetReplicas(context.Background(), tc.script, cloneSet(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "GetReplicas") {
					t.Fatalf("err = %v, want one naming GetReplicas and containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantN || (rr != nil) != tc.wantRR {
				t.Errorf("got %d, %+v; want %d, requirements %v", n, rr, tc.wantN, tc.wantRR)
			}
			if rr != nil && (rr.Namespace != "shop" || rr.ResourceRequest.Cpu().MilliValue() != 1500 || rr.ResourceRequest.Memory().Value() != 1<<30) {
				t.Errorf("requirements = %+v, want 1500m CPU, 1Gi in shop", rr)
			}
		})
	}
}

func TestReviseReplicaSetsReplicasAsAnIntegerAndKeepsEverythingElse(t *testing.T) {
	in := cloneSet(t)
	out, err := testVM().ReviseReplica(context.Background(), reviseReplicaScript, in, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := in.DeepCopy()
	want.Object["spec"].(map[string]any)["replicas"] = int64(5)
	if d := cmp.Diff(want.Object, out.Object); d != "" {
		t.Errorf("object (-want +got):\n%s", d)
	}
}

func TestRetainKeepsTheObservedFieldsTheMemberOwns(t *testing.T) {
	desired := cloneSet(t)
	observed := cloneSet(t)
	_ = unstructured.SetNestedField(observed.Object, true, "spec", "paused")
	_ = unstructured.SetNestedField(observed.Object, map[string]any{"maxUnavailable": int64(2)}, "spec", "scaleStrategy")
	_ = unstructured.SetNestedField(observed.Object, "member-only", "metadata", "annotations", "member")

	out, err := testVM().Retain(context.Background(), retainScript, desired, observed)
	if err != nil {
		t.Fatal(err)
	}
	want := desired.DeepCopy()
	_ = unstructured.SetNestedField(want.Object, true, "spec", "paused")
	_ = unstructured.SetNestedField(want.Object, map[string]any{"maxUnavailable": int64(2)}, "spec", "scaleStrategy")
	if d := cmp.Diff(want.Object, out.Object); d != "" {
		t.Errorf("object (-want +got):\n%s", d)
	}
}

func TestAggregateStatusSumsTheMembersReadyReplicas(t *testing.T) {
	obj := cloneSet(t)
	unstructured.RemoveNestedField(obj.Object, "status")
	items := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "a", Applied: true, Health: "Healthy", Status: &runtime.RawExtension{Raw: []byte(`{"replicas":2,"readyReplicas":2}`)}},
		{ClusterName: "b", Applied: true, Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1,"readyReplicas":0}`)}},
		{ClusterName: "c", Applied: false, AppliedMessage: "quota"},
	}
	out, err := testVM().AggregateStatus(context.Background(), aggregateStatusScript, obj, items)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"replicas": int64(3), "readyReplicas": int64(2)}
	if d := cmp.Diff(want, out.Object["status"]); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

func TestAggregateStatusPassesItemsWithKarmadasFieldNames(t *testing.T) {
	script := `
function AggregateStatus(obj, items)
  obj.status = {members = {}}
  for _, it in ipairs(items) do
    table.insert(obj.status.members, {
      name = it.clusterName, applied = it.applied, message = it.appliedMessage,
      health = it.health, ready = it.status and it.status.readyReplicas,
    })
  end
  return obj
end`
	items := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "a", Applied: true, Health: "Healthy", Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2}`)}},
		{ClusterName: "b", AppliedMessage: "quota exceeded"},
	}
	out, err := testVM().AggregateStatus(context.Background(), script, cloneSet(t), items)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"name": "a", "applied": true, "health": "Healthy", "ready": int64(2)},
		map[string]any{"name": "b", "applied": false, "message": "quota exceeded"},
	}
	if d := cmp.Diff(want, mustField(t, out.Object, "status", "members")); d != "" {
		t.Errorf("members (-want +got):\n%s", d)
	}
}

func TestAggregateStatusGivesNilItemsWhenThereAreNone(t *testing.T) {
	script := `function AggregateStatus(obj, items)
  obj.status = {itemsWereNil = items == nil}
  return obj
end`
	out, err := testVM().AggregateStatus(context.Background(), script, cloneSet(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := mustField(t, out.Object, "status", "itemsWereNil"); v != true {
		t.Errorf("itemsWereNil = %v", v)
	}
}

func TestInterpretHealth(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(map[string]any)
		want    bool
		wantErr string
	}{
		{"an up-to-date, available CloneSet is healthy", func(map[string]any) {}, true, ""},
		{"an unobserved generation is unhealthy", func(o map[string]any) {
			_ = unstructured.SetNestedField(o, int64(3), "status", "observedGeneration")
		}, false, ""},
		{"fewer available than updated replicas is unhealthy", func(o map[string]any) {
			_ = unstructured.SetNestedField(o, int64(1), "status", "availableReplicas")
		}, false, ""},
		{"a script failing on a missing status names the function", func(o map[string]any) {
			delete(o, "status")
		}, false, "InterpretHealth: luaScript:3: attempt to index a non-table object(nil) with key 'observedGeneration'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := cloneSet(t)
			tc.mutate(obj.Object)
			got, err := testVM().InterpretHealth(context.Background(), interpretHealthScript, obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestReflectStatusReportsTheChosenFieldsWithIntegersAndEmptyLists(t *testing.T) {
	raw, err := testVM().ReflectStatus(context.Background(), reflectStatusScript, cloneSet(t))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"conditions":[],"generation":4,"observedGeneration":4,"readyReplicas":2,"replicas":3,"resourceTemplateGeneration":4}`
	if string(raw.Raw) != want {
		t.Errorf("status = %s, want %s", raw.Raw, want)
	}
}

func TestReflectStatusOfAnObjectWithoutStatusIsAnEmptyObject(t *testing.T) {
	obj := cloneSet(t)
	delete(obj.Object, "status")
	raw, err := testVM().ReflectStatus(context.Background(), reflectStatusScript, obj)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw.Raw) != "{}" {
		t.Errorf("status = %s, want {}", raw.Raw)
	}
}

func TestGetDependenciesListsWhatThePodTemplateUses(t *testing.T) {
	deps, err := testVM().GetDependencies(context.Background(), getDependenciesScript, cloneSet(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []Dependency{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web-config"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web-env"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "registry"},
		{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "shop", Name: "web"},
		{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "web-data"},
	}
	if d := cmp.Diff(want, deps); d != "" {
		t.Errorf("dependencies (-want +got):\n%s", d)
	}
}

func TestGetDependenciesCases(t *testing.T) {
	cases := []struct {
		name, script string
		want         []Dependency
		wantErr      string
	}{
		{"a template using nothing has none", `
local kube = require("kube")
function GetDependencies(obj)
  return kube.getPodDependencies({spec = {containers = {{name = "c", image = "i"}}}}, obj.metadata.namespace)
end`, nil, ""},
		{"nil means none", `function GetDependencies(obj) return nil end`, nil, ""},
		{"a label selector stands for a name", `
function GetDependencies(obj)
  return {{apiVersion = "v1", kind = "Secret", namespace = "shop", labelSelector = {matchLabels = {app = "web"}}}}
end`, []Dependency{{APIVersion: "v1", Kind: "Secret", Namespace: "shop",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, ""},
		{"the namespace defaults to default as in Karmada", `
local kube = require("kube")
function GetDependencies(obj)
  return kube.getPodDependencies({spec = {serviceAccountName = "robot"}}, nil)
end`, []Dependency{{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "default", Name: "robot"}}, ""},
		{"a string is not a list", `function GetDependencies(obj) return "cm" end`, nil, "GetDependencies returned a string"},
		{"a dependency needs a kind", `function GetDependencies(obj) return {{apiVersion = "v1", name = "x"}} end`, nil, "without apiVersion, kind"},
		{"a dependency is a table", `function GetDependencies(obj) return {"cm"} end`, nil, "DependentObjectReference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deps, err := testVM().GetDependencies(context.Background(), tc.script, cloneSet(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, deps); d != "" {
				t.Errorf("dependencies (-want +got):\n%s", d)
			}
		})
	}
}

func TestKubeHelpers(t *testing.T) {
	cases := []struct {
		name, expr, want string
	}{
		{"getResourceQuantity reads milli-units", `kube.getResourceQuantity("250m")`, "0.25"},
		{"getResourceQuantity reads binary suffixes", `kube.getResourceQuantity("1Gi")`, "1073741824"},
		{"resourceAdd sums quantities", `kube.resourceAdd("250m", "1", nil, "0.5")`, "1750m"},
		{"accuratePodRequirements of a template needing nothing is nil", `tostring(kube.accuratePodRequirements({spec = {containers = {{name = "c"}}}}))`, "nil"},
		{"accuratePodRequirements gives quantities as strings", `kube.accuratePodRequirements({spec = {containers = {{name = "c", resources = {requests = {cpu = "2"}}}}}}).resourceRequest.cpu`, "2"},
		{"kube is also a global", `tostring(kube == require("kube"))`, "true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := `local kube = require("kube")
function ReflectStatus(obj) return {v = tostring(` + tc.expr + `)} end`
			raw, err := testVM().ReflectStatus(context.Background(), script, cloneSet(t))
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ V string }
			if err := json.Unmarshal(raw.Raw, &got); err != nil || got.V != tc.want {
				t.Errorf("%s = %q (%v), want %q", tc.expr, got.V, err, tc.want)
			}
		})
	}
}

func TestKarmadaScriptsUsingOsDateAndStringFunctionsRun(t *testing.T) {
	script := `
function ReflectStatus(obj)
  local status = {}
  status.lastTransitionTime = os.date("!%Y-%m-%dT%H:%M:%SZ")
  status.year = os.date("!*t", 0).year
  status.epoch = os.time({year = 1970, month = 1, day = 2, hour = 0})
  status.kind = string.lower(obj.kind)
  status.parts = {}
  for p in string.gmatch("a,b,c", "[^,]+") do table.insert(status.parts, p) end
  status.joined = table.concat(status.parts, "-")
  status.formatted = string.format("%s/%03d", obj.metadata.name, obj.spec.replicas)
  status.max = math.max(1, obj.spec.replicas)
  return status
end`
	raw, err := testVM().ReflectStatus(context.Background(), script, cloneSet(t))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw.Raw, &got); err != nil {
		t.Fatal(err)
	}
	if ts, _ := got["lastTransitionTime"].(string); len(ts) != len("2006-01-02T15:04:05Z") || !strings.HasSuffix(ts, "Z") {
		t.Errorf("lastTransitionTime = %v", got["lastTransitionTime"])
	}
	for k, want := range map[string]any{"year": 1970.0, "kind": "cloneset", "joined": "a-b-c", "formatted": "web/003", "max": 3.0} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}
