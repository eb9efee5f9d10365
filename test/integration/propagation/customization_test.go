package propagation_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// workloadCRD is the Workload kind of Karmada's customization examples:
// replicas and a pod template like a Deployment's, and a status
// subresource, on the hub and in both members.
func workloadCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "workloads.workload.example.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "workload.example.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "workloads", Singular: "workload", Kind: "Workload", ListKind: "WorkloadList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

func installCRDEverywhere(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	for name, c := range map[string]client.Client{"hub": hub.Client, member1: members[member1], member2: members[member2]} {
		obj := crd.DeepCopy()
		if err := c.Create(ctx(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("install %s in %s: %v", crd.Name, name, err)
		}
		eventually(t, crd.Name+" established in "+name, func() error {
			if err := c.Get(ctx(), keyOf(obj), obj); err != nil {
				return err
			}
			for _, cond := range obj.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("not established")
		})
		// The members' REST mappers learn the kind on their next miss.
	}
}

// karmadaCustomization reads a Karmada customization and changes only its
// apiVersion.
func karmadaCustomization(t *testing.T, file string) *configv1alpha1.ResourceInterpreterCustomization {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ric := &configv1alpha1.ResourceInterpreterCustomization{}
	manifest := strings.ReplaceAll(string(raw), "config.karmada.io/v1alpha1", "config.flotilla.io/v1alpha1")
	if err := yaml.UnmarshalStrict([]byte(manifest), ric); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	return ric
}

func workload(namespace, name string, replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"paused":   false,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "web", "image": "registry.k8s.io/pause:3.10",
					"resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "64Mi"}},
				}}},
			},
		},
	}}
	return u
}

// TestAKarmadaCustomizationDrivesACustomKind: a Workload CRD on the hub and
// in both members, and Karmada's customization for it with only apiVersion
// changed. Flotilla reads its replicas and per-replica requests through
// GetReplicas (kube.accuratePodRequirements), writes each member's share
// through ReviseReplica (2 and 1), keeps the member's spec.paused through
// Retain, judges health through InterpretHealth, keeps what ReflectStatus
// picks, and writes the template's status on the hub through
// AggregateStatus. A script that fails says so in a condition, and the
// binding recovers once the customization is fixed.
func TestAKarmadaCustomizationDrivesACustomKind(t *testing.T) {
	const ns = "customized"
	namespace(t, ns, true)
	installCRDEverywhere(t, workloadCRD())
	ric := karmadaCustomization(t, "../api/testdata/karmada/resourceinterpretercustomization-workload.yaml")
	create(t, ric)
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), ric) })

	tmpl := workload(ns, "shop", 3)
	create(t, tmpl)
	create(t, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "workload.example.io/v1alpha1", Kind: "Workload", Name: "shop"}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{member1, member2}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided},
			},
		},
	})

	rb := waitForBinding(t, ns, "shop", "Workload")
	eventually(t, "the binding's replicas and per-replica requests read by GetReplicas", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		rr := rb.Spec.ReplicaRequirements
		if rb.Spec.Replicas != 3 || rr == nil {
			return fmt.Errorf("replicas %d, requirements %+v", rb.Spec.Replicas, rr)
		}
		if cpu := rr.ResourceRequest.Cpu(); cpu.Cmp(resource.MustParse("250m")) != 0 {
			return fmt.Errorf("cpu per replica %s, want 250m", cpu)
		}
		if mem := rr.ResourceRequest.Memory(); mem.Cmp(resource.MustParse("64Mi")) != 0 {
			return fmt.Errorf("memory per replica %s, want 64Mi", mem)
		}
		return nil
	})
	schedule(t, rb, placement(member1, 2, member2, 1))

	inMemberShop := func(member string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(tmpl.GroupVersionKind())
		u.SetNamespace(ns)
		u.SetName("shop")
		return u, inMember(member, u)
	}
	for member, want := range map[string]int64{member1: 2, member2: 1} {
		eventually(t, fmt.Sprintf("%s's Workload with its share of %d, written by ReviseReplica", member, want), func() error {
			u, err := inMemberShop(member)
			if err != nil {
				return err
			}
			if got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); got != want {
				return fmt.Errorf("spec.replicas %d", got)
			}
			return nil
		})
	}

	// Not ready yet: InterpretHealth says Unhealthy.
	eventually(t, "member1 Unhealthy by InterpretHealth before its Workload reports ready replicas", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		if len(w.Status.ManifestStatuses) != 1 || w.Status.ManifestStatuses[0].Health != workv1alpha1.ResourceUnhealthy {
			return fmt.Errorf("manifestStatuses %s", rawJSON(w.Status.ManifestStatuses))
		}
		return nil
	})

	// Each member's controller (here the test) reports its replicas ready,
	// and someone pauses member2's copy.
	for member, ready := range map[string]int64{member1: 2, member2: 1} {
		u, err := inMemberShop(member)
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = map[string]any{"readyReplicas": ready, "observedGeneration": u.GetGeneration(), "internal": "not reflected"}
		if err := members[member].Status().Update(ctx(), u); err != nil {
			t.Fatalf("report %s's status: %v", member, err)
		}
	}
	u, _ := inMemberShop(member2)
	_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
	if err := members[member2].Update(ctx(), u); err != nil {
		t.Fatalf("pause member2's Workload: %v", err)
	}

	eventually(t, "both members Healthy on the binding with the status ReflectStatus picks", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		if len(rb.Status.AggregatedStatus) != 2 {
			return fmt.Errorf("aggregatedStatus %s", rawJSON(rb.Status.AggregatedStatus))
		}
		for _, item := range rb.Status.AggregatedStatus {
			if item.Health != workv1alpha1.ResourceHealthy || item.Status == nil {
				return fmt.Errorf("%s: %s", item.ClusterName, rawJSON(item))
			}
			if strings.Contains(string(item.Status.Raw), "internal") || !strings.Contains(string(item.Status.Raw), "readyReplicas") {
				return fmt.Errorf("%s reflected %s, want readyReplicas and observedGeneration only", item.ClusterName, item.Status.Raw)
			}
		}
		return nil
	})
	eventually(t, "the hub template's status.readyReplicas 3, written by AggregateStatus", func() error {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(tmpl.GroupVersionKind())
		if err := hub.Client.Get(ctx(), keyOf(tmpl), got); err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas"); n != 3 {
			return fmt.Errorf("status %v", got.Object["status"])
		}
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionStatusAggregated, metav1.ConditionTrue, workv1alpha1.BindingReasonStatusAggregated, "aggregated")
	})

	// A template change re-applies: member2's paused stays, by Retain.
	update(t, hub.Client, tmpl.DeepCopy(), func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "v2", "spec", "template", "metadata", "labels", "version")
	})
	eventually(t, "member2's Workload with the new template label and still paused, by Retain", func() error {
		u, err := inMemberShop(member2)
		if err != nil {
			return err
		}
		if v, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "labels", "version"); v != "v2" {
			return fmt.Errorf("template label %q", v)
		}
		if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); !paused {
			t.Fatalf("member2's spec.paused set back to false over the member's true")
		}
		return nil
	})

	// A broken GetReplicas: the binding says why, and keeps what it had.
	update(t, hub.Client, &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: ric.Name}},
		func(r *configv1alpha1.ResourceInterpreterCustomization) {
			r.Spec.Customizations.ReplicaResource.LuaScript = "function GetReplicas(obj)\n  return kube.noSuchHelper(obj), nil\nend\n"
		})
	eventually(t, "the binding's Interpreted condition False with the script's error", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		if err := hasCondition(rb, workv1alpha1.ConditionInterpreted, metav1.ConditionFalse, workv1alpha1.BindingReasonInterpreterFailed,
			"ResourceInterpreterCustomization "+ric.Name+", replicaResource"); err != nil {
			return err
		}
		if c := conditions.Get(rb, workv1alpha1.ConditionInterpreted); !strings.Contains(c.Message, "noSuchHelper") {
			return fmt.Errorf("message %q does not name the missing helper", c.Message)
		}
		if rb.Spec.Replicas != 3 {
			t.Fatalf("replicas %d after the script failed, want the 3 last read", rb.Spec.Replicas)
		}
		return nil
	})

	// Fixed: the condition goes, without touching the template.
	update(t, hub.Client, &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: ric.Name}},
		func(r *configv1alpha1.ResourceInterpreterCustomization) {
			r.Spec.Customizations.ReplicaResource.LuaScript = "function GetReplicas(obj)\n  return obj.spec.replicas + 1, nil\nend\n"
		})
	eventually(t, "the Interpreted condition gone and the new script's replicas read", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		if c := conditions.Get(rb, workv1alpha1.ConditionInterpreted); c != nil {
			return fmt.Errorf("Interpreted %+v", c)
		}
		if rb.Spec.Replicas != 4 {
			return fmt.Errorf("replicas %d, want 4", rb.Spec.Replicas)
		}
		return nil
	})

	// A broken ReviseReplica: the binding's Rendered says so, and is
	// rendered again once the customization is fixed, the template untouched.
	revise := func(script string) {
		update(t, hub.Client, &configv1alpha1.ResourceInterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: ric.Name}},
			func(r *configv1alpha1.ResourceInterpreterCustomization) {
				r.Spec.Customizations.ReplicaRevision.LuaScript = script
			})
	}
	revise("function ReviseReplica(obj, n)\n  return nil\nend\n")
	eventually(t, "Rendered False, reason InterpreterFailed, naming replicaRevision", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonInterpreterFailed,
			"ResourceInterpreterCustomization "+ric.Name+", replicaRevision")
	})
	revise("function ReviseReplica(obj, n)\n  obj.spec.replicas = n\n  return obj\nend\n")
	eventually(t, "Rendered True again once the script is fixed", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered, "")
	})
}

// TestACustomizationWhoseScriptDoesNotCompileIsRefused: the webhook runs
// the Lua compiler and names the field and Lua's message.
func TestACustomizationWhoseScriptDoesNotCompileIsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		rules configv1alpha1.CustomizationRules
		want  []string
	}{
		"syntax error": {
			rules: configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.LuaScript{LuaScript: "function InterpretHealth(obj)\n  return obj.status.ready ==\nend\n"}},
			want:  []string{"spec.customizations.healthInterpretation.luaScript", "InterpretHealth"},
		},
		"wrong function": {
			rules: configv1alpha1.CustomizationRules{ReplicaRevision: &configv1alpha1.LuaScript{LuaScript: "function Revise(obj, n)\n  return obj\nend\n"}},
			want:  []string{"spec.customizations.replicaRevision.luaScript", "ReviseReplica"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ric := &configv1alpha1.ResourceInterpreterCustomization{
				ObjectMeta: metav1.ObjectMeta{Name: "broken-" + strings.ReplaceAll(name, " ", "-")},
				Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
					Target:         configv1alpha1.CustomizationTarget{APIVersion: "workload.example.io/v1alpha1", Kind: "Workload"},
					Customizations: c.rules,
				},
			}
			err := hub.Client.Create(ctx(), ric)
			if err == nil {
				_ = hub.Client.Delete(ctx(), ric)
				t.Fatal("created a customization whose script does not compile")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
}
