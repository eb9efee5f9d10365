package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// federatedNamespace creates a federated namespace on the hub, removed after the spec.
func federatedNamespace(ctx context.Context, name string) {
	Expect(theFleet.Apply(ctx, []byte(fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %s, labels: {flotilla.io/federated: "true"}}
`, name)))).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		_ = theFleet.Hub.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// memberDeployment reads a Deployment in a member; nil when absent.
func memberDeployment(ctx context.Context, m *fleet.Member, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return nil
	}
	return d
}

func readyReplicas(ctx context.Context, m *fleet.Member, ns, name string) func() string {
	return func() string {
		d := memberDeployment(ctx, m, ns, name)
		if d == nil {
			return "absent"
		}
		return fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, *d.Spec.Replicas)
	}
}

func envValue(ctx context.Context, m *fleet.Member, ns, name string) func() string {
	return func() string {
		d := memberDeployment(ctx, m, ns, name)
		if d == nil || len(d.Spec.Template.Spec.Containers[0].Env) == 0 {
			return ""
		}
		return d.Spec.Template.Spec.Containers[0].Env[0].Value
	}
}

const labTemplate = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: fleet-web, namespace: lab}
spec:
  replicas: 6
  selector: {matchLabels: {app: fleet-web}}
  template:
    metadata: {labels: {app: fleet-web}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        env: [{name: TIER, value: shared}]
        resources: {requests: {cpu: 100m}}
---
apiVersion: v1
kind: Service
metadata: {name: fleet-web, namespace: lab}
spec:
  selector: {app: fleet-web}
  ports: [{port: 80}]
`

const labDuplicated = `
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: fleet-web, namespace: lab}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: fleet-web}
  - {apiVersion: v1, kind: Service, name: fleet-web}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
`

const labWeighted = `
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: fleet-web, namespace: lab}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: fleet-web}
  - {apiVersion: v1, kind: Service, name: fleet-web}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [member1]}, weight: 2}
        - {targetCluster: {clusterNames: [member2]}, weight: 1}
`

const labOverride = `
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: fleet-web, namespace: lab}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: fleet-web}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      plaintext:
      - {path: /spec/template/spec/containers/0/env/0/value, operator: replace, value: secondary}
`

var _ = Describe("Propagation", func() {
	It("runs the Karmada lab: duplicated 6 + 6, divided 4 + 2, a member2-only override, and clean removal", func(ctx SpecContext) {
		karmadaLab(ctx)
	}, SpecTimeout(10*time.Minute))

	It("changes only the targeted member with image, labels and field overriders, and carries a referenced ConfigMap along", func(ctx SpecContext) {
		m1, m2 := theFleet.Member("member1"), theFleet.Member("member2")
		federatedNamespace(ctx, "overrides")
		Expect(theFleet.Apply(ctx, []byte(`
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: overrides}
data:
  config.yaml: |
    server:
      port: 8080
      name: app
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: overrides, labels: {team: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - name: app
        image: docker.io/library/nginx:1.27
        envFrom: [{configMapRef: {name: app-config}}]
        resources: {requests: {cpu: 50m}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: overrides}
data:
  config.yaml: |
    server:
      port: 8080
      name: settings
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: app, namespace: overrides}
spec:
  propagateDeps: true
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: app}
  - {apiVersion: v1, kind: ConfigMap, name: settings}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: member2-workload, namespace: overrides}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: app}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      imageOverrider: [{component: Registry, operator: replace, value: registry.example.com}]
      labelsOverrider: [{operator: add, value: {site: member2}}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: member2-settings, namespace: overrides}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      fieldOverrider:
      - fieldPath: /data/config.yaml
        yaml: [{subPath: /server/port, operator: replace, value: 9090}]
`))).To(Succeed())

		image := func(m *fleet.Member) func() string {
			return func() string {
				d := memberDeployment(ctx, m, "overrides", "app")
				if d == nil {
					return ""
				}
				return d.Spec.Template.Spec.Containers[0].Image
			}
		}
		eventually(ctx, image(m2)).WithTimeout(2 * timeUnit).Should(Equal("registry.example.com/library/nginx:1.27"))
		eventually(ctx, image(m1)).WithTimeout(timeUnit).Should(Equal("docker.io/library/nginx:1.27"))
		Expect(memberDeployment(ctx, m2, "overrides", "app").Labels).To(HaveKeyWithValue("site", "member2"))
		Expect(memberDeployment(ctx, m1, "overrides", "app").Labels).NotTo(HaveKey("site"))

		settings := func(m *fleet.Member) func() string {
			return func() string {
				cm := &corev1.ConfigMap{}
				if err := m.Client.Get(ctx, client.ObjectKey{Namespace: "overrides", Name: "settings"}, cm); err != nil {
					return ""
				}
				return cm.Data["config.yaml"]
			}
		}
		eventually(ctx, settings(m2)).WithTimeout(timeUnit).Should(And(ContainSubstring("port: 9090"), ContainSubstring("name: settings")))
		Expect(settings(m1)()).To(ContainSubstring("port: 8080"))

		By("propagateDeps: the ConfigMap the Deployment references follows it, and leaves with it")
		for _, m := range []*fleet.Member{m1, m2} {
			eventually(ctx, func() error {
				return m.Client.Get(ctx, client.ObjectKey{Namespace: "overrides", Name: "app-config"}, &corev1.ConfigMap{})
			}).WithTimeout(timeUnit).Should(Succeed(), "app-config in %s", m.Name())
		}
		Expect(theFleet.Hub.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "overrides", Name: "app"}})).To(Succeed())
		for _, m := range []*fleet.Member{m1, m2} {
			eventually(ctx, func() bool {
				err := m.Client.Get(ctx, client.ObjectKey{Namespace: "overrides", Name: "app-config"}, &corev1.ConfigMap{})
				return apierrors.IsNotFound(err)
			}).WithTimeout(2*timeUnit).Should(BeTrue(), "app-config left %s", m.Name())
		}
	}, SpecTimeout(8*time.Minute))
})

// karmadaLab is Karmada's propagation lab on member1 and member2: Duplicated
// 6 + 6, Divided 2:1 into 4 + 2, a member2-only override, and removal of
// everything with the template. It runs alone and right after a redeploy
// that left the members full (redeploy_test.go).
func karmadaLab(ctx context.Context) {
	m1, m2, m3 := theFleet.Member("member1"), theFleet.Member("member2"), theFleet.Member("member3")
	// Both the Propagation and the Redeploy specs run the lab; the one that
	// ran first deletes namespace lab when it ends, and templates applied
	// while it terminates are refused.
	eventually(ctx, func() error {
		err := theFleet.Hub.Client.Get(ctx, client.ObjectKey{Name: "lab"}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace lab of an earlier lab is still there (%v)", err)
	}).WithTimeout(2 * timeUnit).Should(Succeed())
	federatedNamespace(ctx, "lab")
	Expect(theFleet.Apply(ctx, []byte(labTemplate+"---"+labDuplicated))).To(Succeed())

	By("Duplicated: 6 replicas Ready in member1 and in member2, and a Service in each")
	eventually(ctx, readyReplicas(ctx, m1, "lab", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("6/6"))
	eventually(ctx, readyReplicas(ctx, m2, "lab", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("6/6"))
	Expect(readyReplicas(ctx, m3, "lab", "fleet-web")()).To(Equal("absent"))
	for _, m := range []*fleet.Member{m1, m2} {
		// The Service is its own binding and Work: it arrives on its own time.
		eventually(ctx, func() error {
			return m.Client.Get(ctx, client.ObjectKey{Namespace: "lab", Name: "fleet-web"}, &corev1.Service{})
		}).WithTimeout(timeUnit).Should(Succeed(), "Service fleet-web in %s", m.Name())
	}

	By("Divided 2:1: 4 + 2")
	Expect(theFleet.Apply(ctx, []byte(labWeighted))).To(Succeed())
	eventually(ctx, readyReplicas(ctx, m1, "lab", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("4/4"))
	eventually(ctx, readyReplicas(ctx, m2, "lab", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("2/2"))
	placement, err := theFleet.WaitWorkloadReady(ctx, "lab", "Deployment", "fleet-web", time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(placement).To(Equal("member1:4 member2:2"))

	By("OverridePolicy on member2 only: secondary there, shared on the hub and member1")
	Expect(theFleet.Apply(ctx, []byte(labOverride))).To(Succeed())
	eventually(ctx, envValue(ctx, m2, "lab", "fleet-web")).WithTimeout(timeUnit).Should(Equal("secondary"))
	Expect(envValue(ctx, m1, "lab", "fleet-web")()).To(Equal("shared"))
	hub := &appsv1.Deployment{}
	Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "lab", Name: "fleet-web"}, hub)).To(Succeed())
	Expect(hub.Spec.Template.Spec.Containers[0].Env[0].Value).To(Equal("shared"))

	By("No Pod of a template ever runs on the hub")
	pods := &corev1.PodList{}
	Expect(theFleet.Hub.Client.List(ctx, pods, client.InNamespace("lab"))).To(Succeed())
	Expect(pods.Items).To(BeEmpty())

	By("Deleting the template and the policy removes everything from the members")
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "fleet-web"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "fleet-web"}},
	} {
		Expect(theFleet.Hub.Client.Delete(ctx, obj)).To(Succeed())
	}
	for _, obj := range []client.Object{
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "fleet-web"}},
		&policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "fleet-web"}},
	} {
		Expect(theFleet.Hub.Client.Delete(ctx, obj)).To(Succeed())
	}
	eventually(ctx, func(g Gomega) {
		for _, m := range []*fleet.Member{m1, m2} {
			err := m.Client.Get(ctx, client.ObjectKey{Namespace: "lab", Name: "fleet-web"}, &appsv1.Deployment{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment in %s: %v", m.Name(), err)
			err = m.Client.Get(ctx, client.ObjectKey{Namespace: "lab", Name: "fleet-web"}, &corev1.Service{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service in %s: %v", m.Name(), err)
		}
	}).WithTimeout(2 * timeUnit).Should(Succeed())
}
