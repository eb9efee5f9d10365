package enrolment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Member names.
//
// A member is named after its Cluster. When another CAPI namespace holds a
// Cluster of the same name at the time of enrolment, or the name does not fit
// the execution namespace flotilla-es-<member> (at most 51 characters, a DNS
// label), EVERY such Cluster gets <name>-<hash>, the hash being the first 8
// hex digits of sha256("<namespace>/<name>"): the outcome depends on which
// Clusters exist, never on which was created or reconciled first. Once a
// member exists its name is recorded in the Cluster's flotilla.io/member-name
// annotation and never changes, even if a same-named Cluster appears later.
// A user may set that annotation before enrolment to choose the name; a
// chosen name held by another Cluster's member is a NameConflict.

const (
	// maxMemberNameLength keeps flotilla-es-<member> a valid namespace name.
	maxMemberNameLength = validation.DNS1123LabelMaxLength - len(clusterv1alpha1.ExecutionNamespacePrefix)
	hashLength          = 8

	// Field indexes of the manager's cache.
	indexClusterRef  = "flotilla.spec.clusterRef"
	indexClusterName = "flotilla.metadata.name"
)

var notLabelChars = regexp.MustCompile(`[^a-z0-9-]+`)

// hashedName is the unique name of a Cluster whose plain name is ambiguous
// or does not fit.
func hashedName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	prefix := notLabelChars.ReplaceAllString(strings.ToLower(name), "-")
	if limit := maxMemberNameLength - hashLength - 1; len(prefix) > limit {
		prefix = prefix[:limit]
	}
	prefix = strings.Trim(prefix, "-")
	if prefix == "" {
		prefix = "member"
	}
	return prefix + "-" + hex.EncodeToString(sum[:])[:hashLength]
}

// validateMemberName checks that name makes valid object and namespace names.
func validateMemberName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("member name %q is not a DNS label: %s", name, strings.Join(errs, "; "))
	}
	if len(name) > maxMemberNameLength {
		return fmt.Errorf("member name %q is longer than %d characters", name, maxMemberNameLength)
	}
	return nil
}

func clusterRefKey(namespace, name string) string { return namespace + "/" + name }

// reconcileMemberName resolves the member's name: the existing member's, the
// one the user chose, or the Cluster's own (hashed when ambiguous).
func (r *Reconciler) reconcileMemberName(ctx context.Context, s *scope) (bool, error) {
	c := s.cluster
	existing, err := r.memberOf(ctx, c.Namespace, c.Name)
	if err != nil {
		return false, err
	}
	chosen := c.Annotations[clusterv1alpha1.MemberNameAnnotation]
	if existing != nil {
		if chosen != "" && chosen != existing.Name {
			r.Recorder.Eventf(c, existing, corev1.EventTypeWarning, clusterv1alpha1.InvalidMemberNameReason, "Name",
				"Member names never change: keeping %s, not %s", existing.Name, chosen)
		}
		s.memberName = existing.Name
		setAnnotation(c, clusterv1alpha1.MemberNameAnnotation, existing.Name)
		return true, nil
	}

	if chosen != "" {
		if err := validateMemberName(chosen); err != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, clusterv1alpha1.InvalidMemberNameReason, "Name", "%s", err.Error())
			return false, nil
		}
		owner, err := r.nameOwner(ctx, chosen)
		if err != nil {
			return false, err
		}
		if owner != nil && *owner != (clusterv1alpha1.ClusterReference{Namespace: c.Namespace, Name: c.Name}) {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, clusterv1alpha1.NameConflictReason, "Name",
				"Member name %s is taken by Cluster %s/%s; choose another in the %s annotation", chosen, owner.Namespace, owner.Name, clusterv1alpha1.MemberNameAnnotation)
			return false, nil
		}
		s.memberName = chosen
		return true, nil
	}

	name, err := r.generatedName(ctx, c)
	if err != nil {
		return false, err
	}
	owner, err := r.nameOwner(ctx, name)
	if err != nil {
		return false, err
	}
	if owner != nil && *owner != (clusterv1alpha1.ClusterReference{Namespace: c.Namespace, Name: c.Name}) {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, clusterv1alpha1.NameConflictReason, "Name",
			"Member name %s is taken by Cluster %s/%s; choose another in the %s annotation", name, owner.Namespace, owner.Name, clusterv1alpha1.MemberNameAnnotation)
		return false, nil
	}
	s.memberName = name
	setAnnotation(c, clusterv1alpha1.MemberNameAnnotation, name)
	return true, nil
}

// generatedName is the Cluster's name, or its hashed form when another
// namespace has a Cluster of that name, the name does not fit, or a member
// of that name belongs to another Cluster.
func (r *Reconciler) generatedName(ctx context.Context, c *capiv1.Cluster) (string, error) {
	if validateMemberName(c.Name) != nil {
		return hashedName(c.Namespace, c.Name), nil
	}
	same := &capiv1.ClusterList{}
	if err := r.Client.List(ctx, same, client.MatchingFields{indexClusterName: c.Name}); err != nil {
		return "", fmt.Errorf("list Clusters named %s: %w", c.Name, err)
	}
	for i := range same.Items {
		if same.Items[i].Namespace != c.Namespace {
			return hashedName(c.Namespace, c.Name), nil
		}
	}
	owner, err := r.nameOwner(ctx, c.Name)
	if err != nil {
		return "", err
	}
	if owner != nil && *owner != (clusterv1alpha1.ClusterReference{Namespace: c.Namespace, Name: c.Name}) {
		return hashedName(c.Namespace, c.Name), nil
	}
	return c.Name, nil
}

// memberOf finds the member made for a Cluster.
func (r *Reconciler) memberOf(ctx context.Context, namespace, name string) (*clusterv1alpha1.MemberCluster, error) {
	list := &clusterv1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexClusterRef: clusterRefKey(namespace, name)}); err != nil {
		return nil, fmt.Errorf("list members of Cluster %s/%s: %w", namespace, name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// nameOwner is the Cluster whose member holds name, or nil.
func (r *Reconciler) nameOwner(ctx context.Context, name string) (*clusterv1alpha1.ClusterReference, error) {
	m := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read MemberCluster %s: %w", name, err)
	}
	return &m.Spec.ClusterRef, nil
}

func setAnnotation(o client.Object, key, value string) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	o.SetAnnotations(a)
}

func setLabel(o client.Object, key, value string) {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[key] = value
	o.SetLabels(l)
}
