package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/quota"
)

// WorkloadQuotaPath is where the workload quota webhook is served.
const WorkloadQuotaPath = "/validate-workload-quota"

// +kubebuilder:webhook:path=/validate-workload-quota,mutating=false,failurePolicy=ignore,sideEffects=None,groups=apps,resources=deployments;deployments/scale;statefulsets;statefulsets/scale;replicasets;replicasets/scale,verbs=create;update,versions=v1,name=quota.workloads.apps.flotilla.io,timeoutSeconds=2,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchLabels":{"flotilla.io/federated":"true"}},"matchConditions":[{"name":"not-made-by-a-controller","expression":"!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(r, has(r.controller) \u0026\u0026 r.controller)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-workload-quota,mutating=false,failurePolicy=ignore,sideEffects=None,groups=batch,resources=jobs,verbs=create;update,versions=v1,name=quota.jobs.batch.flotilla.io,timeoutSeconds=2,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchLabels":{"flotilla.io/federated":"true"}},"matchConditions":[{"name":"not-made-by-a-controller","expression":"!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(r, has(r.controller) \u0026\u0026 r.controller)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// WorkloadQuotaWebhooks name the warning webhooks of the markers above in
// the ValidatingWebhookConfiguration. Their namespaceSelector is kept by the
// quota controller (controllers/quota WebhookScope) to the federated
// namespaces that hold a FederatedResourceQuota: a template written anywhere
// else costs the hub no call to the manager. timeoutSeconds is short because
// a warning is worth little against a template write stalled by a busy or
// hung manager (failurePolicy Ignore admits it when the time is up).
var WorkloadQuotaWebhooks = []string{"quota.workloads.apps.flotilla.io", "quota.jobs.batch.flotilla.io"}

// WorkloadQuota gives fast feedback where the user acts: creating, updating
// or scaling a workload template (Deployment, StatefulSet, ReplicaSet, Job)
// of a federated namespace in a way that would take the namespace past a
// FederatedResourceQuota's overall gets an admission warning naming the
// quota, the key, the request and what is left — kubectl prints it on
// apply and scale.
//
// A warning, never a denial: the scheduler is where quota is enforced (the
// binding stays Scheduled=False, reason QuotaExceeded, and is retried as
// soon as quota frees). Denying would refuse the template itself although
// the quota may free a moment later (another workload scaling down), would
// lose the user's intent, and would block a scale-up of which the
// scheduler could place part later. The estimate here is the template's
// replicas (per member for a Duplicated placement) against what the
// namespace's bindings use now; the scheduler decides on the placement.
// failurePolicy Ignore: an unavailable manager never blocks a workload.
// Objects a controller makes (a ReplicaSet of a Deployment, a Job of a
// CronJob, on the hub refused anyway by the flotilla-inert-templates
// admission policy) are not templates and never reach the webhook: a
// matchCondition leaves them out in the apiserver, as are updates that
// leave the spec as it was (the detector's claim labels, for one).
type WorkloadQuota struct {
	// Client reads FederatedResourceQuotas and ResourceBindings (cached).
	Client client.Reader
	// APIReader reads the workload behind a scale request: the manager
	// does not cache every workload of the hub.
	APIReader client.Reader
	// RESTMapper tells the kind behind a scale request's resource.
	RESTMapper meta.RESTMapper
}

// SetupWithManager registers the webhook.
func (w *WorkloadQuota) SetupWithManager(mgr ctrl.Manager) error {
	if w.Client == nil {
		w.Client = mgr.GetClient()
	}
	if w.APIReader == nil {
		w.APIReader = mgr.GetAPIReader()
	}
	if w.RESTMapper == nil {
		w.RESTMapper = mgr.GetRESTMapper()
	}
	mgr.GetWebhookServer().Register(WorkloadQuotaPath, &admission.Webhook{Handler: w})
	return nil
}

// Handle admits every request, with warnings when it cannot fit.
func (w *WorkloadQuota) Handle(ctx context.Context, req admission.Request) admission.Response {
	warnings, err := w.warnings(ctx, req)
	if err != nil {
		// Fast feedback only: a failure here never blocks the workload.
		ctrl.LoggerFrom(ctx).Error(err, "quota warnings", "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
		return admission.Allowed("")
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

func (w *WorkloadQuota) warnings(ctx context.Context, req admission.Request) ([]string, error) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return nil, nil
	}
	obj, old, err := w.objects(ctx, req)
	if err != nil || obj == nil {
		return nil, err
	}
	if metav1.GetControllerOf(obj) != nil {
		return nil, nil // the hub's own ReplicaSets of a Deployment are not templates
	}
	n, perReplica, err := interpreter.GetReplicas(obj)
	if err != nil {
		return nil, err
	}
	if old != nil {
		oldN, oldReq, err := interpreter.GetReplicas(old)
		if err == nil && oldN == n && equality.Semantic.DeepEqual(oldReq, perReplica) {
			return nil, nil // neither replicas nor requirements changed
		}
	}
	quotas := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := w.Client.List(ctx, quotas, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("list FederatedResourceQuotas: %w", err)
	}
	if len(quotas.Items) == 0 {
		return nil, nil
	}
	bindings := &workv1alpha1.ResourceBindingList{}
	if err := w.Client.List(ctx, bindings, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("list ResourceBindings: %w", err)
	}
	request := QuotaRequest(obj, n, perReplica, bindings.Items)
	used := namespaceUsage(bindings.Items)
	slices.SortFunc(quotas.Items, func(a, b policyv1alpha1.FederatedResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	var out []string
	for i := range quotas.Items {
		q := &quotas.Items[i]
		if !q.DeletionTimestamp.IsZero() {
			continue
		}
		for _, v := range quota.Check(q.Namespace+"/"+q.Name, q.Spec.Overall, used, request) {
			out = append(out, v.String()+"; the workload is admitted, but its binding will not be placed past the quota "+
				"(Scheduled=False, reason QuotaExceeded) until quota frees")
		}
	}
	return out, nil
}

// QuotaRequest is what a template would add to its namespace's usage: its
// replicas × requirements (every member's copy for a Duplicated binding),
// less what its binding uses now.
func QuotaRequest(obj *unstructured.Unstructured, n int32, req *workv1alpha1.ReplicaRequirements, bindings []workv1alpha1.ResourceBinding) corev1.ResourceList {
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	after := quota.Workload{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Requirements: req,
		Clusters: []workv1alpha1.TargetCluster{{Replicas: n}}}
	var before corev1.ResourceList
	for i := range bindings {
		b := &bindings[i]
		res := b.Spec.Resource
		rgv, _ := schema.ParseGroupVersion(res.APIVersion)
		if res.Kind != obj.GetKind() || res.Name != obj.GetName() || rgv.Group != gv.Group {
			continue
		}
		before = quota.Usage(quota.WorkloadOf(&b.Spec))
		if p := b.Spec.Placement; p != nil && p.ReplicaScheduling != nil &&
			p.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDuplicated && len(b.Spec.Clusters) > 0 {
			after.Clusters = nil
			for _, c := range b.Spec.Clusters {
				after.Clusters = append(after.Clusters, workv1alpha1.TargetCluster{Name: c.Name, Replicas: n})
			}
		}
		break
	}
	return quota.Subtract(quota.Usage(after), before)
}

// namespaceUsage is what the namespace's bindings use (as the tracker
// counts what the API server shows).
func namespaceUsage(bindings []workv1alpha1.ResourceBinding) corev1.ResourceList {
	used := corev1.ResourceList{}
	for i := range bindings {
		if bindings[i].DeletionTimestamp.IsZero() {
			used = quota.Add(used, quota.Usage(quota.WorkloadOf(&bindings[i].Spec)))
		}
	}
	return used
}

// objects is the workload as it would be after the request, and before
// (nil on create). A scale request carries only a Scale: the workload is
// read and given the Scale's replicas.
func (w *WorkloadQuota) objects(ctx context.Context, req admission.Request) (*unstructured.Unstructured, *unstructured.Unstructured, error) {
	if req.SubResource == "scale" {
		gvk, err := w.RESTMapper.KindFor(schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource})
		if err != nil {
			return nil, nil, fmt.Errorf("the kind of %s: %w", req.Resource.Resource, err)
		}
		kind := gvk.Kind
		var scale struct {
			Spec struct {
				Replicas int32 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(req.Object.Raw, &scale); err != nil {
			return nil, nil, fmt.Errorf("decode Scale: %w", err)
		}
		old := &unstructured.Unstructured{}
		old.SetGroupVersionKind(schema.GroupVersionKind{Group: req.Resource.Group, Version: req.Resource.Version, Kind: kind})
		if err := w.APIReader.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, old); err != nil {
			return nil, nil, fmt.Errorf("read %s %s/%s: %w", kind, req.Namespace, req.Name, err)
		}
		obj := old.DeepCopy()
		if revised, err := interpreter.ReviseReplica(obj, scale.Spec.Replicas); err != nil || !revised {
			return nil, nil, err // a kind without replicas the interpreter knows: nothing to estimate
		}
		return obj, old, nil
	}
	if req.SubResource != "" {
		return nil, nil, nil
	}
	obj, err := decode(req.Object.Raw)
	if err != nil {
		return nil, nil, err
	}
	var old *unstructured.Unstructured
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		if old, err = decode(req.OldObject.Raw); err != nil {
			return nil, nil, err
		}
	}
	return obj, old, nil
}

func decode(raw []byte) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode the workload: %w", err)
	}
	return obj, nil
}

var _ admission.Handler = &WorkloadQuota{}
