package quota

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// storageClassSuffix joins a storage class to the key it limits, as in
// "gold.storageclass.storage.k8s.io/requests.storage".
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// betaStorageClassAnnotation is the storage class of a claim written before
// spec.storageClassName existed; a ResourceQuota still honours it.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// ObjectsUsage is what a member's ResourceQuota would count for objs, the
// objects one member receives from a binding (after overrides, envelopes
// unwrapped), every key they touch:
//
//   - every object: `count/<resource>[.<group>]`, and the legacy name of
//     core kinds (configmaps, secrets, services, replicationcontrollers,
//     persistentvolumeclaims, resourcequotas);
//   - the Pods an object makes, as pods says (the interpreter's Pods:
//     Deployment, StatefulSet, ReplicaSet, Job, Pod, ReplicationController,
//     and kinds a customization reads replicas of): `pods`, their requests
//     under `<name>` and `requests.<name>`, limits under `limits.<name>`;
//   - a PersistentVolumeClaim: `requests.storage` and, for its storage
//     class, `<class>.storageclass.storage.k8s.io/requests.storage` and
//     `…/persistentvolumeclaims`;
//   - a Service of type LoadBalancer: `services.loadbalancers`; of type
//     NodePort, or LoadBalancer allocating node ports: `services.nodeports`,
//     one per port.
//
// Kinds whose Pods cannot be told from the object (DaemonSet, CronJob)
// count as objects only.
func ObjectsUsage(objs []*unstructured.Unstructured, pods PodsOf) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, obj := range objs {
		if err := addObject(out, obj, pods); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PodsOf is how many Pods obj makes in a member and what one requests; ok
// is false for kinds whose Pods cannot be told from the object.
type PodsOf func(obj *unstructured.Unstructured) (n int64, req *workv1alpha1.ReplicaRequirements, ok bool, err error)

func addObject(out corev1.ResourceList, obj *unstructured.Unstructured, pods PodsOf) error {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	for _, key := range countKeys(obj.GetAPIVersion(), obj.GetKind()) {
		add(out, key, one)
	}
	n, req, ok, err := pods(obj)
	if err != nil {
		return err
	}
	if ok {
		addPods(out, n, req)
		return nil
	}
	gvk := obj.GroupVersionKind()
	if gvk.Group != "" {
		return nil
	}
	switch gvk.Kind {
	case "PersistentVolumeClaim":
		pvc := &corev1.PersistentVolumeClaim{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pvc); err != nil {
			return fmt.Errorf("read PersistentVolumeClaim %s: %w", obj.GetName(), err)
		}
		storage := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		add(out, corev1.ResourceRequestsStorage, storage)
		class := pvc.Annotations[betaStorageClassAnnotation]
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		if class != "" {
			add(out, corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage)), storage)
			add(out, corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)), one)
		}
	case "Service":
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, svc); err != nil {
			return fmt.Errorf("read Service %s: %w", obj.GetName(), err)
		}
		nodePorts := false
		switch svc.Spec.Type {
		case corev1.ServiceTypeLoadBalancer:
			add(out, corev1.ResourceServicesLoadBalancers, one)
			nodePorts = svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
		case corev1.ServiceTypeNodePort:
			nodePorts = true
		}
		if nodePorts && len(svc.Spec.Ports) > 0 {
			add(out, corev1.ResourceServicesNodePorts, *resource.NewQuantity(int64(len(svc.Spec.Ports)), resource.DecimalSI))
		}
	}
	return nil
}

// objectCountKeys are the legacy object-count keys of a ResourceQuota
// (besides every count/… key).
var objectCountKeys = map[corev1.ResourceName]bool{
	corev1.ResourceConfigMaps:             true,
	corev1.ResourceSecrets:                true,
	corev1.ResourceServices:               true,
	corev1.ResourceReplicationControllers: true,
	corev1.ResourcePersistentVolumeClaims: true,
	corev1.ResourceQuotas:                 true,
	corev1.ResourceServicesLoadBalancers:  true,
	corev1.ResourceServicesNodePorts:      true,
}

// ObjectCount reports whether a quota key counts objects (count/…,
// configmaps, services.loadbalancers, <class>…/persistentvolumeclaims…)
// rather than resources Pods and claims consume.
func ObjectCount(key corev1.ResourceName) bool {
	s := string(key)
	return objectCountKeys[key] || strings.HasPrefix(s, countPrefix) ||
		strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))
}

// Fleet combines what each member of a binding would count (ObjectsUsage
// per member) into the binding's usage of a federated quota: resources
// (cpu, memory, pods, storage…) are summed over the members; object counts
// take the largest member's, since the same object sent to three members is
// one object of the fleet, as a template placed on three members counts
// once in Usage.
func Fleet(members ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, m := range members {
		for key, q := range m {
			if !ObjectCount(key) {
				add(out, key, q)
				continue
			}
			if have, ok := out[key]; !ok || q.Cmp(have) > 0 {
				out[key] = q.DeepCopy()
			}
		}
	}
	return out
}
