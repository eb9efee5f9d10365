package luavm

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const identity = `function ReviseReplica(obj, n) return obj end`

func TestObjectsRoundTripUnchanged(t *testing.T) {
	cases := map[string]*unstructured.Unstructured{
		"a CloneSet": cloneSet(t),
		"a Deployment": object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: "n", labels: {}, annotations: {a: "1"}}
spec:
  replicas: 3
  progressDeadlineSeconds: 600
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}
  template:
    metadata: {creationTimestamp: null, labels: {app: d}}
    spec:
      containers:
      - name: c
        image: i
        command: []
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {}
        securityContext: {runAsNonRoot: true, runAsUser: 1000}
      volumes: [{name: v, emptyDir: {}}]
      tolerations: []
status: {}
`),
		"a custom resource with floats, nested lists and empty values": object(t, `
apiVersion: example.io/v1
kind: Model
metadata: {name: m}
spec:
  weight: 1.0
  ratio: 0.25
  big: 9007199254740992
  negative: -3
  matrix: [[1, 2], [], [{}], [[]]]
  flags: [true, false]
  nothing: {}
  text: ""
`),
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := testVM().ReviseReplica(context.Background(), identity, obj, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(obj.Object, out.Object); d != "" {
				t.Errorf("round trip (-in +out):\n%s", d)
			}
		})
	}
}

func TestEmptyTablesReturned(t *testing.T) {
	obj := object(t, `
kind: Thing
spec:
  list: [1]
  map: {a: 1}
  emptyList: []
  emptyMap: {}
  items: [{ports: [80]}, {ports: [81]}]
`)
	cases := []struct {
		name, body string
		want       map[string]any
	}{
		{"a list emptied by the script stays a list", `obj.spec.list[1] = nil`,
			map[string]any{"list": []any{}}},
		{"a map emptied by the script stays a map", `obj.spec.map.a = nil`,
			map[string]any{"map": map[string]any{}}},
		{"an empty list moved elsewhere stays a list", `obj.spec.moved = obj.spec.emptyList`,
			map[string]any{"moved": []any{}}},
		{"a new empty table where the input had a list is a list", `obj.spec.emptyList = {}`,
			map[string]any{"emptyList": []any{}}},
		{"a new empty table where the input had a map is a map", `obj.spec.emptyMap = {}`,
			map[string]any{"emptyMap": map[string]any{}}},
		{"a new empty table in a new list item takes the shape of the other items", `obj.spec.items[3] = {ports = {}}`,
			map[string]any{"items": []any{
				map[string]any{"ports": []any{int64(80)}}, map[string]any{"ports": []any{int64(81)}}, map[string]any{"ports": []any{}}}}},
		{"a new empty table of unknown shape is left out, as in Karmada", `obj.spec.unknown = {}`,
			map[string]any{}},
		{"a new empty table in a list is an empty map", `obj.spec.unknown = {{}, {a = 1}}`,
			map[string]any{"unknown": []any{map[string]any{}, map[string]any{"a": int64(1)}}}},
		{"a list with a hole keeps its length", `obj.spec.holes = {1, nil, 3}`,
			map[string]any{"holes": []any{int64(1), nil, int64(3)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := "function ReviseReplica(obj, n)\n" + tc.body + "\nreturn obj end"
			out, err := testVM().ReviseReplica(context.Background(), script, obj, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := obj.DeepCopy().Object["spec"].(map[string]any)
			for k, v := range tc.want {
				want[k] = v
			}
			if d := cmp.Diff(want, out.Object["spec"]); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
		})
	}
}

func TestNumbersReturned(t *testing.T) {
	cases := []struct {
		name, expr string
		want       any
	}{
		{"a whole number is an int64", `3`, int64(3)},
		{"a computed whole number is an int64", `obj.spec.replicas * 2 / 2`, int64(3)},
		{"a fraction is a float64", `1 / 4`, 0.25},
		{"a large whole number stays an int64", `2^53`, int64(1 << 53)},
		{"a whole number beyond int64 is a float64", `2^70`, float64(1 << 70)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := "function ReviseReplica(obj, n) obj.spec.out = " + tc.expr + " return obj end"
			out, err := testVM().ReviseReplica(context.Background(), script, cloneSet(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Object["spec"].(map[string]any)["out"]; got != tc.want {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestAWholeNumberWhereTheInputHadAFloatStaysAFloat(t *testing.T) {
	obj := object(t, "kind: Model\nspec: {weight: 0.5}")
	out, err := testVM().ReviseReplica(context.Background(), `function ReviseReplica(obj, n) obj.spec.weight = 2 return obj end`, obj, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Object["spec"].(map[string]any)["weight"]; got != 2.0 {
		t.Errorf("weight = %#v, want float64 2", got)
	}
}

func TestValuesWithoutAJSONFormAreErrors(t *testing.T) {
	cases := []struct {
		name, body, wantErr string
	}{
		{"a function", `obj.spec.f = print`, "spec.f is a Lua function, which has no JSON form"},
		{"a cycle", `obj.spec.self = obj.spec`, "spec.self contains itself"},
		{"mixed keys", `obj.spec.mixed = {1, a = 2}`, "spec.mixed mixes field names and list indices"},
		{"a sparse list", `obj.spec.sparse = {[1] = 1, [10] = 2}`, "spec.sparse is a sparse list"},
		{"a boolean key", `obj.spec.keys = {[true] = 1}`, "spec.keys has the key true (a boolean)"},
		{"not a number", `obj.spec.nan = 0/0`, "spec.nan: NaN is not a JSON number"},
		{"an infinity in a list", `obj.spec.l = {1, 1/0}`, "spec.l[1]: +Inf is not a JSON number"},
		{"a list instead of an object", `obj = {1, 2}`, "ReviseReplica returned a list, want an object table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := "function ReviseReplica(obj, n)\n" + tc.body + "\nreturn obj end"
			_, err := testVM().ReviseReplica(context.Background(), script, cloneSet(t), 1)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "luavm: ReviseReplica: ") {
				t.Fatalf("err = %v\nwant %q", err, tc.wantErr)
			}
		})
	}
}

func TestSharedTablesConvertEachTime(t *testing.T) {
	script := `function ReviseReplica(obj, n)
  local shared = {a = 1}
  obj.spec.x = {shared, shared}
  return obj
end`
	out, err := testVM().ReviseReplica(context.Background(), script, cloneSet(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"a": int64(1)}, map[string]any{"a": int64(1)}}
	if d := cmp.Diff(want, out.Object["spec"].(map[string]any)["x"]); d != "" {
		t.Error(d)
	}
}
