// Package webhooks holds flotilla-manager's admission webhooks: the checks
// that the CRD schema cannot express within the apiserver's CEL cost budget
// or that need the Lua compiler (interpreter customizations), Karmada's defaults for propagation policies (which depend on other
// fields), and the quota warnings on workload templates (WorkloadQuota). Each webhook
// delegates its logic to a pure library under internal/.
package webhooks

import ctrl "sigs.k8s.io/controller-runtime"

// SetupWithManager registers every webhook with the manager's webhook server.
func SetupWithManager(mgr ctrl.Manager) error {
	if err := (&FederatedResourceQuota{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&InertNamespace{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&FederatedNamespace{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ResourceBinding{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (PropagationPolicy{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (ClusterPropagationPolicy{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&OverridePolicy{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ClusterOverridePolicy{}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ResourceInterpreterCustomization{}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&WorkloadQuota{}).SetupWithManager(mgr)
}
