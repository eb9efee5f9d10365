package agent

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/memberstatus"
)

// statusReporter publishes what the hub would read of a Push-mode member
// into the agent's MemberCluster status: the Kubernetes version, the API
// enablements, and the capacity model and summaries flotilla-estimator
// publishes in the member. It writes when something changed, and refreshes
// lastHeartbeatTime at least every heartbeat.
type statusReporter struct {
	// hub must not read from a cache: the agent may not list MemberClusters.
	hub       client.Client
	member    kubernetes.Interface
	name      string
	period    time.Duration
	heartbeat time.Duration
	clock     clock.Clock
}

// Start reports every period until ctx ends. It implements manager.Runnable.
func (r *statusReporter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("memberCluster", r.name)
	for {
		if err := r.report(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Could not report the member's status; trying again next period")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.clock.After(r.period):
		}
	}
}

func (r *statusReporter) report(ctx context.Context) error {
	m := &clusterv1alpha1.MemberCluster{}
	if err := r.hub.Get(ctx, client.ObjectKey{Name: r.name}, m); err != nil {
		return fmt.Errorf("read MemberCluster %s: %w", r.name, err)
	}
	if m.Spec.SyncMode != clusterv1alpha1.Pull {
		return nil // the hub reports a Push-mode member itself
	}
	before := m.DeepCopy()
	if err := r.observe(ctx, &m.Status); err != nil {
		return err
	}
	now := r.clock.Now()
	last := m.Status.LastHeartbeatTime
	if equality.Semantic.DeepEqual(before.Status, m.Status) && last != nil && now.Sub(last.Time) < r.heartbeat {
		return nil
	}
	m.Status.LastHeartbeatTime = &metav1.Time{Time: now}
	if err := r.hub.Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("write the status of MemberCluster %s: %w", r.name, err)
	}
	return nil
}

// observe reads the member as the agent's ServiceAccount into st.
func (r *statusReporter) observe(ctx context.Context, st *clusterv1alpha1.MemberClusterStatus) error {
	version, err := r.member.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("read the member's version: %w", err)
	}
	st.KubernetesVersion = version.GitVersion
	_, lists, err := r.member.Discovery().ServerGroupsAndResources()
	switch {
	case err == nil:
		st.APIEnablements = memberstatus.APIEnablements(lists)
	case discovery.IsGroupDiscoveryFailedError(err):
		// A partial discovery (an aggregated API down) would drop the groups
		// that failed: keep the last full one.
	default:
		return fmt.Errorf("discover the member's API: %w", err)
	}
	cm, err := r.member.CoreV1().ConfigMaps(clusterv1alpha1.SystemNamespace).Get(ctx, clusterv1alpha1.CapacityModelConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// The estimator has not published yet.
	case err != nil:
		return fmt.Errorf("read the capacity model: %w", err)
	default:
		if err := memberstatus.SetCapacity(st, cm.Data); err != nil {
			// A malformed model is the estimator's bug; the rest is still worth reporting.
			ctrl.LoggerFrom(ctx).Error(err, "Ignoring the member's capacity model")
		}
	}
	return nil
}
