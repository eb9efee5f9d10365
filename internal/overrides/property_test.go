package overrides

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// gen draws random templates and policies, valid or not, from a seed.
type gen struct{ r *rand.Rand }

func pick[T any](g gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

func (g gen) strings(max int, xs ...string) []string {
	out := []string{}
	for range g.r.IntN(max + 1) {
		out = append(out, pick(g, xs...))
	}
	return out
}

func (g gen) stringMap(max int) map[string]any {
	m := map[string]any{}
	for _, k := range g.strings(max, "app", "tier", "example.com/owner", "env") {
		m[k] = pick(g, "web", "db", "x")
	}
	return m
}

func (g gen) containers(max int) []any {
	var cs []any
	for i := range g.r.IntN(max + 1) {
		c := map[string]any{
			"name":  pick(g, "app", "sidecar", "init") + fmt.Sprint(i),
			"image": pick(g, "nginx:1.25", "docker.io/library/nginx", "localhost:5000/a/b@"+digest, "Bad/Image"),
		}
		if g.r.IntN(2) == 0 {
			c["command"] = toAny(g.strings(3, "/app", "-v", "serve"))
		}
		if g.r.IntN(2) == 0 {
			c["args"] = toAny(g.strings(3, "--port=80", "-v"))
		}
		cs = append(cs, c)
	}
	return cs
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (g gen) template() *unstructured.Unstructured {
	podSpec := map[string]any{"containers": g.containers(3), "initContainers": g.containers(1)}
	obj := map[string]any{"metadata": map[string]any{"name": "w", "namespace": "default", "labels": g.stringMap(3), "annotations": g.stringMap(2)}}
	switch pick(g, "Deployment", "Pod", "CronJob", "ConfigMap") {
	case "Deployment":
		obj["apiVersion"], obj["kind"] = "apps/v1", "Deployment"
		obj["spec"] = map[string]any{"replicas": int64(g.r.IntN(5)), "template": map[string]any{"spec": podSpec}}
	case "Pod":
		obj["apiVersion"], obj["kind"] = "v1", "Pod"
		obj["spec"] = podSpec
	case "CronJob":
		obj["apiVersion"], obj["kind"] = "batch/v1", "CronJob"
		obj["spec"] = map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": podSpec}}}}
	default:
		obj["apiVersion"], obj["kind"] = "v1", "ConfigMap"
		obj["data"] = map[string]any{"config.yaml": "a: 1\nb:\n  c: [1, 2]\n", "config.json": `{"a":1}`}
	}
	return &unstructured.Unstructured{Object: obj}
}

func (g gen) overriders() policyv1alpha1.Overriders {
	var o policyv1alpha1.Overriders
	paths := []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/app", "/data/config.yaml", "/spec/missing", "/metadata/name"}
	ops := []policyv1alpha1.OverriderOperator{"add", "remove", "replace"}
	for range g.r.IntN(3) {
		o.Plaintext = append(o.Plaintext, policyv1alpha1.PlaintextOverrider{Path: pick(g, paths...), Operator: pick(g, ops...), Value: raw(pick(g, `3`, `"x"`, `{"k": [1]}`))})
	}
	for range g.r.IntN(3) {
		im := policyv1alpha1.ImageOverrider{Component: pick[policyv1alpha1.ImageComponent](g, "Registry", "Repository", "Tag"), Operator: pick(g, ops...), Value: pick(g, "mirror.io", "v2", "/sub")}
		if g.r.IntN(3) == 0 {
			im.Predicate = &policyv1alpha1.ImagePredicate{Path: pick(g, paths...)}
		}
		o.ImageOverrider = append(o.ImageOverrider, im)
	}
	for range g.r.IntN(3) {
		ca := policyv1alpha1.CommandArgsOverrider{ContainerName: pick(g, "app0", "sidecar1", "init0"), Operator: pick[policyv1alpha1.OverriderOperator](g, "add", "remove"), Value: g.strings(2, "-v", "--x")}
		if g.r.IntN(2) == 0 {
			o.CommandOverrider = append(o.CommandOverrider, ca)
		} else {
			o.ArgsOverrider = append(o.ArgsOverrider, ca)
		}
	}
	for range g.r.IntN(3) {
		la := policyv1alpha1.LabelAnnotationOverrider{Operator: pick(g, ops...), Value: map[string]string{pick(g, "app", "new", "example.com/owner"): "v"}}
		if g.r.IntN(2) == 0 {
			o.LabelsOverrider = append(o.LabelsOverrider, la)
		} else {
			o.AnnotationsOverrider = append(o.AnnotationsOverrider, la)
		}
	}
	if g.r.IntN(3) == 0 {
		o.FieldOverrider = append(o.FieldOverrider, policyv1alpha1.FieldOverrider{FieldPath: pick(g, "/data/config.yaml", "/data/config.json", "/metadata"),
			YAML: []policyv1alpha1.YAMLPatchOperation{{SubPath: pick(g, "/a", "/b/c/0", "/z"), Operator: pick(g, ops...), Value: raw(`5`)}}})
	}
	return o
}

func (g gen) spec() policyv1alpha1.OverrideSpec {
	var spec policyv1alpha1.OverrideSpec
	if g.r.IntN(4) == 0 {
		spec.Overriders = g.overriders()
	}
	for range g.r.IntN(3) {
		rule := policyv1alpha1.RuleWithCluster{Overriders: g.overriders()}
		if g.r.IntN(2) == 0 {
			rule.TargetCluster = onlyOn(pick(g, "member1", "member2"))
		}
		spec.OverrideRules = append(spec.OverrideRules, rule)
	}
	return spec
}

func (g gen) policies() ([]policyv1alpha1.ClusterOverridePolicy, []policyv1alpha1.OverridePolicy) {
	var cops []policyv1alpha1.ClusterOverridePolicy
	var ops []policyv1alpha1.OverridePolicy
	for i := range g.r.IntN(3) {
		cops = append(cops, clusterPolicy(fmt.Sprint("cop", i), g.spec()))
	}
	for i := range g.r.IntN(3) {
		ops = append(ops, namespacedPolicy(pick(g, "default", "other"), fmt.Sprint("op", i), g.spec()))
	}
	return cops, ops
}

const propertyRuns = 400

// Apply must leave its inputs alone, whether it succeeds or fails, and give
// the same answer for the same inputs.
func TestApplyNeverMutatesItsInputsAndIsDeterministic(t *testing.T) {
	failures, successes := 0, 0
	for seed := range uint64(propertyRuns) {
		g := gen{rand.New(rand.NewPCG(seed, 1))}
		template := g.template()
		cops, ops := g.policies()
		templateBefore := template.DeepCopy()
		copsBefore, opsBefore := deepCopyPolicies(cops, ops)
		m := member(pick(g, "member1", "member2"), nil)

		res1, err1 := Apply(template, m, cops, ops)
		res2, err2 := Apply(template, m, cops, ops)

		if !reflect.DeepEqual(template.Object, templateBefore.Object) {
			t.Fatalf("seed %d: template changed\nbefore: %s\n after: %s", seed, pretty(templateBefore.Object), pretty(template.Object))
		}
		if gotC, gotO := deepCopyPolicies(cops, ops); !reflect.DeepEqual(gotC, copsBefore) || !reflect.DeepEqual(gotO, opsBefore) {
			t.Fatalf("seed %d: policies changed", seed)
		}
		if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(res1, res2) {
			t.Fatalf("seed %d: two runs differ: %v / %v", seed, err1, err2)
		}
		if err1 != nil {
			failures++
			continue
		}
		successes++
		// The result shares no memory with the template.
		scribble(res1.Object.Object)
		if !reflect.DeepEqual(template.Object, templateBefore.Object) {
			t.Fatalf("seed %d: the result aliases the template", seed)
		}
	}
	// Both paths must have been exercised for the property to mean anything.
	if failures == 0 || successes == 0 {
		t.Fatalf("generator is degenerate: %d failures, %d successes", failures, successes)
	}
}

func TestApplyWithNoPoliciesReturnsAnEqualCopy(t *testing.T) {
	for seed := range uint64(propertyRuns) {
		g := gen{rand.New(rand.NewPCG(seed, 2))}
		template := g.template()
		before := template.DeepCopy()
		res, err := Apply(template, member("member1", nil), nil, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(res.Object.Object, before.Object) || len(res.Applied) != 0 {
			t.Fatalf("seed %d: result differs from the template or records rules: %v", seed, res.Applied)
		}
		scribble(res.Object.Object)
		if !reflect.DeepEqual(template.Object, before.Object) {
			t.Fatalf("seed %d: the result aliases the template", seed)
		}
	}
}

// Rules that target another member change nothing, however broken.
func TestRulesForAnotherMemberChangeNothing(t *testing.T) {
	for seed := range uint64(propertyRuns) {
		g := gen{rand.New(rand.NewPCG(seed, 3))}
		template := g.template()
		spec := policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{TargetCluster: onlyOn("member2"), Overriders: g.overriders()}}}
		res, err := Apply(template, member("member1", nil), []policyv1alpha1.ClusterOverridePolicy{clusterPolicy("cop", spec)}, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(res.Object.Object, template.Object) || len(res.Applied) != 0 {
			t.Fatalf("seed %d: member1 was changed by a rule for member2", seed)
		}
	}
}

func deepCopyPolicies(cops []policyv1alpha1.ClusterOverridePolicy, ops []policyv1alpha1.OverridePolicy) ([]policyv1alpha1.ClusterOverridePolicy, []policyv1alpha1.OverridePolicy) {
	var c []policyv1alpha1.ClusterOverridePolicy
	var o []policyv1alpha1.OverridePolicy
	for i := range cops {
		c = append(c, *cops[i].DeepCopy())
	}
	for i := range ops {
		o = append(o, *ops[i].DeepCopy())
	}
	return c, o
}

// scribble overwrites every map entry and list element it can reach.
func scribble(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			scribble(child)
			x[k] = "scribbled"
		}
	case []any:
		for i, child := range x {
			scribble(child)
			x[i] = "scribbled"
		}
	}
}
