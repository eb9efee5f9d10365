package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GetConditions returns the member's conditions; with SetConditions it lets
// Cluster API's conditions and patch utilities handle a MemberCluster.
func (m *MemberCluster) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces the member's conditions.
func (m *MemberCluster) SetConditions(c []metav1.Condition) { m.Status.Conditions = c }
