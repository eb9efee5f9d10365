package tenancy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// RuleExternalIPs is the traffic rule's message: a Service with
// spec.externalIPs makes every node of the member accept traffic for those
// addresses and hand it to the Service's Pods (CVE-2020-8554), whoever the
// addresses belong to.
const RuleExternalIPs = "spec.externalIPs (%s) would make every node of the member answer for those addresses and take their traffic (CVE-2020-8554); a cluster admin allows it by labelling the hub namespace %s " + policyv1alpha1.AllowExternalIPsLabel + "=true"

// ExternalIPs are the addresses obj would make the member's nodes answer
// for: a core Service's spec.externalIPs; nil for anything else.
func ExternalIPs(obj *unstructured.Unstructured) []string {
	if obj.GetAPIVersion() != "v1" || obj.GetKind() != "Service" {
		return nil
	}
	ips, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "externalIPs")
	return ips
}

// GrabsTraffic checks obj, about to be rendered into a member, against the
// traffic rule. namespaceLabels are the labels of obj's namespace on the
// hub; it is read only for a Service that has externalIPs. The error is a
// *Violation when obj may not be rendered, and the namespace read's error
// otherwise.
func GrabsTraffic(obj *unstructured.Unstructured, namespaceLabels func(namespace string) (map[string]string, error)) error {
	ips := ExternalIPs(obj)
	if len(ips) == 0 {
		return nil
	}
	labels, err := namespaceLabels(obj.GetNamespace())
	if err != nil {
		return err
	}
	if labels[policyv1alpha1.AllowExternalIPsLabel] == "true" {
		return nil
	}
	return &Violation{Object: IdentityOf(obj), Rule: fmt.Sprintf(RuleExternalIPs, strings.Join(ips, ", "), obj.GetNamespace())}
}
