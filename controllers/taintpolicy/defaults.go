package taintpolicy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/taintpolicy"
)

// DefaultsHashAnnotation records the hash of the spec flotilla-manager last
// wrote to a default policy. A default whose spec still has that hash was not
// edited, and follows the manager's flags (e.g. a new grace period); an
// edited one is left as the user made it.
const DefaultsHashAnnotation = "taintpolicy.flotilla.io/defaults-hash"

// Defaults creates the default policy set at startup (internal/taintpolicy.Defaults).
type Defaults struct {
	Client client.Client
	// Grace is the NoExecute wait of the unreachable and not-ready policies.
	Grace time.Duration
}

var _ manager.Runnable = &Defaults{}

// Start ensures the defaults once; it runs on the elected leader only.
func (d *Defaults) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("default-taint-policies")
	for _, want := range taintpolicy.Defaults(d.Grace) {
		action, err := d.ensure(ctx, want)
		if err != nil {
			return fmt.Errorf("default ClusterTaintPolicy %s: %w", want.Name, err)
		}
		if action != "" {
			log.Info("Default ClusterTaintPolicy "+action, "name", want.Name)
		}
	}
	return nil
}

// ensure creates a missing default, and updates an unedited one whose spec
// differs from the flags'.
func (d *Defaults) ensure(ctx context.Context, want policyv1alpha1.ClusterTaintPolicy) (string, error) {
	hash, err := specHash(&want.Spec)
	if err != nil {
		return "", err
	}
	have := &policyv1alpha1.ClusterTaintPolicy{}
	err = d.Client.Get(ctx, client.ObjectKey{Name: want.Name}, have)
	if apierrors.IsNotFound(err) {
		want.Annotations = map[string]string{DefaultsHashAnnotation: hash}
		if err := d.Client.Create(ctx, &want); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
		return "created", nil
	}
	if err != nil {
		return "", err
	}
	haveHash, err := specHash(&have.Spec)
	if err != nil {
		return "", err
	}
	if have.Annotations[DefaultsHashAnnotation] != haveHash || haveHash == hash {
		return "", nil // edited by a user, or already as wanted
	}
	before := have.DeepCopy()
	have.Spec = want.Spec
	have.Annotations[DefaultsHashAnnotation] = hash
	if err := d.Client.Patch(ctx, have, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return "", err
	}
	return "updated", nil
}

func specHash(spec *policyv1alpha1.ClusterTaintPolicySpec) (string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8]), nil
}
