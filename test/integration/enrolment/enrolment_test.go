package enrolment_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestLabelledClusterBecomesEnrolledMember(t *testing.T) {
	ns := "enrol-labelled"
	c := createCluster(t, ns, "alpha", clusterOpts{
		notInitialized: true,
		labels: map[string]string{
			clusterv1alpha1.EnrolLabel: "true", "topology.kubernetes.io/region": "eu-west",
			"member.flotilla.io/tier": "gold", "unrelated.example/label": "x",
		},
	})

	// Before the control plane is up: a member that says what it waits for.
	eventually(t, "member alpha waiting for the control plane", func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "alpha"}, m); err != nil {
			return err
		}
		if e := meta(m.Status.Conditions, clusterv1alpha1.ConditionEnrolled); e == nil || e.Reason != clusterv1alpha1.WaitingForControlPlaneReason {
			return fmt.Errorf("Enrolled = %+v", e)
		}
		if r := meta(m.Status.Conditions, clusterv1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready = %+v, want False before enrolment", r)
		}
		return nil
	})

	// Measure from a member that has never been enrolled: no identity yet,
	// so the member's token controller is on the path.
	for _, o := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-hub-token"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-hub"}},
	} {
		if err := memberAdmin.Delete(ctx(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	start := time.Now()
	initializeControlPlane(t, c, []string{"eu-west-b", "eu-west-a"})
	m := waitEnrolled(t, "alpha")
	t.Logf("enrolment latency, controlPlaneInitialized written → Enrolled=True with status observed: %s", time.Since(start).Round(time.Millisecond))

	if m.Spec.ClusterRef != (clusterv1alpha1.ClusterReference{Namespace: ns, Name: "alpha"}) || m.Spec.SyncMode != clusterv1alpha1.Push {
		t.Errorf("clusterRef %+v, syncMode %s; want %s/alpha, Push", m.Spec.ClusterRef, m.Spec.SyncMode, ns)
	}
	if m.Spec.Provider != "docker" || m.Spec.Region != "eu-west" || m.Spec.Zone != "" || !slices.Equal(m.Spec.Zones, []string{"eu-west-a", "eu-west-b"}) {
		t.Errorf("provider %q region %q zone %q zones %v; want docker (from DockerCluster), eu-west, no zone, [eu-west-a eu-west-b]",
			m.Spec.Provider, m.Spec.Region, m.Spec.Zone, m.Spec.Zones)
	}
	wantLabels := map[string]string{"flotilla.io/provider": "docker", "topology.kubernetes.io/region": "eu-west", "member.flotilla.io/tier": "gold"}
	for k, v := range wantLabels {
		if m.Labels[k] != v {
			t.Errorf("member label %s = %q, want %q", k, m.Labels[k], v)
		}
	}
	if _, ok := m.Labels["unrelated.example/label"]; ok {
		t.Errorf("member has the Cluster's unrelated label: %v", m.Labels)
	}
	// Ready is the health controller's, which follows Enrolled on its own.
	eventually(t, "alpha Ready", func() error {
		got := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		if r := meta(got.Status.Conditions, clusterv1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue || r.Reason != clusterv1alpha1.ReadyReason {
			return fmt.Errorf("Ready = %+v, want True/Ready", r)
		}
		return nil
	})
	if m.Status.KubernetesVersion == "" || m.Status.LastHeartbeatTime == nil {
		t.Errorf("kubernetesVersion %q, lastHeartbeatTime %v; want both set", m.Status.KubernetesVersion, m.Status.LastHeartbeatTime)
	}
	if !servesResource(m, "apps/v1", "deployments") {
		t.Errorf("apiEnablements lack apps/v1 deployments: %+v", m.Status.APIEnablements)
	}
	if ref := m.Status.IdentitySecretRef; ref == nil || *ref != (corev1.SecretReference{Namespace: "flotilla-system", Name: "alpha-hub-identity"}) {
		t.Errorf("identitySecretRef = %+v, want flotilla-system/alpha-hub-identity", ref)
	}

	// On the hub: execution namespace, identity Secret, Cluster annotations.
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "flotilla-es-alpha"}, &corev1.Namespace{}); err != nil {
		t.Errorf("execution namespace: %v", err)
	}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: "flotilla-system", Name: "alpha-hub-identity"}, &corev1.Secret{}); err != nil {
		t.Errorf("hub identity Secret: %v", err)
	}
	got := getCluster(t, ns, "alpha")
	if got.Annotations[clusterv1alpha1.MemberNameAnnotation] != "alpha" || got.Labels[clusterv1alpha1.MemberLabel] != "alpha" ||
		!slices.Contains(got.Finalizers, clusterv1alpha1.ClusterFinalizer) {
		t.Errorf("Cluster annotations %v, labels %v, finalizers %v; want member name, member label and finalizer", got.Annotations, got.Labels, got.Finalizers)
	}

	// In the member: the scoped identity.
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-hub"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-hub-token"}},
	} {
		if err := memberAdmin.Get(ctx(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("member %T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
	}
}

func servesResource(m *clusterv1alpha1.MemberCluster, gv, resource string) bool {
	for _, e := range m.Status.APIEnablements {
		if e.GroupVersion == gv {
			return slices.ContainsFunc(e.Resources, func(r clusterv1alpha1.APIResource) bool { return r.Name == resource })
		}
	}
	return false
}

func TestUnlabelledClusterIsLeftAlone(t *testing.T) {
	ns := "enrol-unlabelled"
	createCluster(t, ns, "ignored", clusterOpts{})
	// A labelled Cluster created after it, enrolled, shows the controller
	// has had its chance at the unlabelled one.
	createCluster(t, ns, "sentinel-unlabelled", clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}})
	waitEnrolled(t, "sentinel-unlabelled")

	c := getCluster(t, ns, "ignored")
	if len(c.Finalizers) > 0 || len(c.Annotations) > 0 || c.Labels[clusterv1alpha1.MemberLabel] != "" {
		t.Errorf("unlabelled Cluster was changed: finalizers %v, annotations %v, labels %v", c.Finalizers, c.Annotations, c.Labels)
	}
	if ok, err := memberExists("ignored"); ok || err != nil {
		t.Errorf("member for the unlabelled Cluster exists=%v (%v)", ok, err)
	}
}

func TestNamespaceLabelOptsInItsClustersUnlessOptedOut(t *testing.T) {
	ns := "enrol-by-namespace"
	ensureNamespace(t, ns, map[string]string{clusterv1alpha1.EnrolLabel: "true"})
	createCluster(t, ns, "opted-out", clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "false"}})
	createCluster(t, ns, "by-namespace", clusterOpts{})

	waitEnrolled(t, "by-namespace")
	if ok, err := memberExists("opted-out"); ok || err != nil {
		t.Errorf("Cluster labelled %s=false was enrolled (exists=%v, %v)", clusterv1alpha1.EnrolLabel, ok, err)
	}
}

func TestSameNameInTwoNamespacesGivesTwoStableMembers(t *testing.T) {
	// Two Clusters named alike that exist when they opt in: both get the
	// hashed form, whatever the order they are seen in.
	createCluster(t, "enrol-twin-a", "twin", clusterOpts{})
	createCluster(t, "enrol-twin-b", "twin", clusterOpts{})
	for _, ns := range []string{"enrol-twin-b", "enrol-twin-a"} {
		updateCluster(t, ns, "twin", func(c *capiv1.Cluster) { c.Labels = enrolled })
	}
	a, b := hashedName("enrol-twin-a", "twin"), hashedName("enrol-twin-b", "twin")
	waitEnrolled(t, a)
	waitEnrolled(t, b)
	if ok, _ := memberExists("twin"); ok {
		t.Errorf("a member took the ambiguous plain name twin")
	}

	// Stable: once the other Cluster is gone, the name does not change.
	deleteCluster(t, "enrol-twin-b", "twin")
	updateCluster(t, "enrol-twin-a", "twin", func(c *capiv1.Cluster) { c.Labels["touch"] = "1" })
	consistently(t, 2*syncPeriod, "member "+a+" keeps its name", func() error {
		if ok, err := memberExists(a); !ok {
			return fmt.Errorf("member %s gone (%v)", a, err)
		}
		if ok, _ := memberExists("twin"); ok {
			return fmt.Errorf("a member named twin appeared")
		}
		if got := getCluster(t, "enrol-twin-a", "twin").Annotations[clusterv1alpha1.MemberNameAnnotation]; got != a {
			return fmt.Errorf("annotation %s = %q", clusterv1alpha1.MemberNameAnnotation, got)
		}
		return nil
	})
}

func TestAClusterNamedBeforeItsTwinAppearedKeepsThePlainName(t *testing.T) {
	createCluster(t, "enrol-first-a", "first-come", clusterOpts{labels: enrolled})
	waitEnrolled(t, "first-come")

	createCluster(t, "enrol-first-b", "first-come", clusterOpts{labels: enrolled})
	late := waitEnrolled(t, hashedName("enrol-first-b", "first-come"))
	if late.Spec.ClusterRef.Namespace != "enrol-first-b" {
		t.Errorf("hashed member belongs to %+v", late.Spec.ClusterRef)
	}
	m := waitEnrolled(t, "first-come")
	if m.Spec.ClusterRef.Namespace != "enrol-first-a" {
		t.Errorf("member first-come now belongs to %+v, want it kept by the Cluster named first", m.Spec.ClusterRef)
	}
}

func TestAnnotationChoosesTheNameAndATakenNameIsAConflict(t *testing.T) {
	choose := func(name string) clusterOpts {
		return clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}, annotations: map[string]string{clusterv1alpha1.MemberNameAnnotation: name}}
	}
	createCluster(t, "enrol-chosen-a", "first", choose("chosen-one"))
	m := waitEnrolled(t, "chosen-one")
	if m.Spec.ClusterRef.Name != "first" {
		t.Fatalf("member chosen-one belongs to %+v", m.Spec.ClusterRef)
	}

	second := createCluster(t, "enrol-chosen-b", "second", choose("chosen-one"))
	eventually(t, "a NameConflict event on the second Cluster", func() error {
		if !slices.Contains(eventReasons(t, second), clusterv1alpha1.NameConflictReason) {
			return fmt.Errorf("events: %v", eventReasons(t, second))
		}
		return nil
	})
	m = waitEnrolled(t, "chosen-one")
	if m.Spec.ClusterRef.Name != "first" {
		t.Errorf("the conflicting Cluster took over member chosen-one: %+v", m.Spec.ClusterRef)
	}
	if ok, _ := memberExists("second"); ok {
		t.Errorf("the conflicting Cluster got a member under another name")
	}
}

func TestPausedClusterIsNotChanged(t *testing.T) {
	ns := "enrol-paused"
	labels := map[string]string{clusterv1alpha1.EnrolLabel: "true"}
	createCluster(t, ns, "paused", clusterOpts{labels: labels, paused: true})
	createCluster(t, ns, "sentinel-paused", clusterOpts{labels: labels})
	waitEnrolled(t, "sentinel-paused")
	if c := getCluster(t, ns, "paused"); len(c.Finalizers) > 0 || len(c.Annotations) > 0 {
		t.Errorf("paused Cluster was changed: finalizers %v, annotations %v", c.Finalizers, c.Annotations)
	}
	if ok, _ := memberExists("paused"); ok {
		t.Errorf("paused Cluster was enrolled")
	}

	// Pausing an enrolled Cluster freezes its member, even when it opts out.
	updateCluster(t, ns, "sentinel-paused", func(c *capiv1.Cluster) {
		c.Spec.Paused = ptrTo(true)
		delete(c.Labels, clusterv1alpha1.EnrolLabel)
	})
	consistently(t, 3*syncPeriod, "the paused member stays", func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "sentinel-paused"}, m); err != nil {
			return err
		}
		if meta(m.Status.Conditions, clusterv1alpha1.ConditionTerminating) != nil {
			return fmt.Errorf("member started terminating while its Cluster is paused")
		}
		return nil
	})

	// Unpaused, the opt-out takes effect.
	updateCluster(t, ns, "sentinel-paused", func(c *capiv1.Cluster) { c.Spec.Paused = ptrTo(false) })
	eventually(t, "the unpaused, opted-out member to be removed", func() error {
		if ok, err := memberExists("sentinel-paused"); ok || err != nil {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

func TestDeletingClusterDrainsThenRemovesMember(t *testing.T) {
	ns := "enrol-delete"
	createCluster(t, ns, "leaving", clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}})
	waitEnrolled(t, "leaving")
	work := newWork("flotilla-es-leaving", "app")
	if err := hub.Client.Create(ctx(), work); err != nil {
		t.Fatal(err)
	}

	if err := hub.Client.Delete(ctx(), getCluster(t, ns, "leaving")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "member leaving Terminating with a NoExecute taint", func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "leaving"}, m); err != nil {
			return err
		}
		term := meta(m.Status.Conditions, clusterv1alpha1.ConditionTerminating)
		if term == nil || term.Status != metav1.ConditionTrue || term.Reason != clusterv1alpha1.ClusterDeletingReason {
			return fmt.Errorf("Terminating = %+v", term)
		}
		if !slices.ContainsFunc(m.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == clusterv1alpha1.TaintTerminating && t.Effect == corev1.TaintEffectNoExecute
		}) {
			return fmt.Errorf("taints %v", m.Spec.Taints)
		}
		return nil
	})
	if ok, _ := memberExists("leaving"); !ok {
		t.Fatal("member removed while a Work was still there")
	}

	start := time.Now()
	if err := hub.Client.Delete(ctx(), work); err != nil {
		t.Fatal(err)
	}
	eventually(t, "member leaving and its hub objects removed, Cluster released", func() error {
		return gone(ns, "leaving", "leaving")
	})
	if took := time.Since(start); took > drainTimeout {
		t.Errorf("removal took %s after the last Work went, longer than the drain timeout %s: the Work deletion was not seen", took, drainTimeout)
	}
}

func TestDrainTimeoutRemovesMemberWithWorksLeft(t *testing.T) {
	ns := "enrol-timeout"
	createCluster(t, ns, "stuck", clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}})
	waitEnrolled(t, "stuck")
	if err := hub.Client.Create(ctx(), newWork("flotilla-es-stuck", "app")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := hub.Client.Delete(ctx(), getCluster(t, ns, "stuck")); err != nil {
		t.Fatal(err)
	}
	eventuallyWithin(t, drainTimeout+waitTimeout, "member stuck removed after the drain timeout", func() error {
		return gone(ns, "stuck", "stuck")
	})
	if took := time.Since(start); took < drainTimeout-time.Second {
		t.Errorf("member removed after %s, before the drain timeout %s", took, drainTimeout)
	}
}

// gone checks that a member, its hub objects and its Cluster are gone.
func gone(ns, cluster, member string) error {
	if err := memberGone(member); err != nil {
		return err
	}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: cluster}, &capiv1.Cluster{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("Cluster still there (%v)", err)
	}
	return nil
}

// memberGone checks that a member and its hub objects are gone (the
// execution namespace at least terminating: envtest runs no namespace
// controller).
func memberGone(member string) error {
	if ok, err := memberExists(member); ok || err != nil {
		return fmt.Errorf("MemberCluster %s still there (%v)", member, err)
	}
	err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: "flotilla-system", Name: member + "-hub-identity"}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("hub identity Secret still there (%v)", err)
	}
	ns := &corev1.Namespace{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "flotilla-es-" + member}, ns); err == nil && ns.DeletionTimestamp.IsZero() {
		return fmt.Errorf("execution namespace not deleted")
	}
	return nil
}

func newWork(ns, name string) *workv1alpha1.Work {
	return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}
