package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Conditions, reasons, finalizer and labels of FederatedResourceQuota (see
// docs/quota.md).
const (
	// QuotaConditionReady is True when the quota is in force: the scheduler
	// places nothing that would take the namespace past spec.overall.
	QuotaConditionReady = "Ready"
	// QuotaReasonInForce: the namespace is federated and the quota enforced.
	QuotaReasonInForce = "InForce"
	// QuotaReasonNamespaceNotFederated: the namespace lacks the
	// flotilla.io/federated=true label, so it holds no templates and the
	// quota is not in force.
	QuotaReasonNamespaceNotFederated = "NamespaceNotFederated"

	// QuotaConditionStaticAssignmentsApplied is True when every static
	// assignment's ResourceQuota is applied in its member; absent when the
	// quota has no static assignments.
	QuotaConditionStaticAssignmentsApplied = "StaticAssignmentsApplied"
	// QuotaReasonApplied: every member holds its ResourceQuota.
	QuotaReasonApplied = "Applied"
	// QuotaReasonMemberNotFound: an assignment names no enrolled member.
	QuotaReasonMemberNotFound = "MemberNotFound"
	// QuotaReasonMemberLeaving: an assignment names a member that is being
	// removed; its ResourceQuota is removed so that it can drain.
	QuotaReasonMemberLeaving = "MemberLeaving"
	// QuotaReasonNotApplied: a member has not applied its ResourceQuota
	// (yet, or it failed: the message says which).
	QuotaReasonNotApplied = "NotApplied"

	// FederatedResourceQuotaFinalizer holds a quota until the Works of its
	// static assignments are deleted.
	FederatedResourceQuotaFinalizer = "policy.flotilla.io/federatedresourcequota"
	// FederatedResourceQuotaPermanentIDLabel on a Work carries the UID of the
	// quota whose static assignment it renders.
	FederatedResourceQuotaPermanentIDLabel = "federatedresourcequota.flotilla.io/permanent-id"
	// FederatedResourceQuotaNamespaceAnnotation and
	// FederatedResourceQuotaNameAnnotation on a Work name its quota.
	FederatedResourceQuotaNamespaceAnnotation = "federatedresourcequota.flotilla.io/namespace"
	FederatedResourceQuotaNameAnnotation      = "federatedresourcequota.flotilla.io/name"
)

// GetConditions returns the quota's conditions.
func (q *FederatedResourceQuota) GetConditions() []metav1.Condition { return q.Status.Conditions }

// SetConditions replaces the quota's conditions.
func (q *FederatedResourceQuota) SetConditions(c []metav1.Condition) { q.Status.Conditions = c }
