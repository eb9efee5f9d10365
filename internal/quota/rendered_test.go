package quota

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

func objects(t *testing.T, manifests ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m), &u.Object); err != nil {
			t.Fatalf("decode manifest: %v", err)
		}
		out = append(out, u)
	}
	return out
}

const (
	bigDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: tenant}
spec:
  replicas: 50
  template:
    spec:
      containers:
      - {name: a, resources: {requests: {cpu: "4", memory: 1Gi}, limits: {cpu: "8"}}}
`
	sidecarJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: tenant}
spec:
  parallelism: 3
  template:
    spec:
      initContainers: [{name: init, resources: {requests: {cpu: "2"}}}]
      containers:
      - {name: a, resources: {requests: {cpu: 500m, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}
`
	goldClaim = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: tenant}
spec: {storageClassName: gold, resources: {requests: {storage: 10Gi}}}
`
	plainClaim = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch, namespace: tenant}
spec: {resources: {requests: {storage: 1Gi}}}
`
	loadBalancer = `
apiVersion: v1
kind: Service
metadata: {name: lb, namespace: tenant}
spec: {type: LoadBalancer, ports: [{port: 80}, {port: 443}]}
`
	nodePortsOff = `
apiVersion: v1
kind: Service
metadata: {name: lb2, namespace: tenant}
spec: {type: LoadBalancer, allocateLoadBalancerNodePorts: false, ports: [{port: 80}]}
`
	nodePort = `
apiVersion: v1
kind: Service
metadata: {name: np, namespace: tenant}
spec: {type: NodePort, ports: [{port: 80}]}
`
	clusterIP = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: tenant}
spec: {ports: [{port: 80}]}
`
	bigPod = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: tenant}
spec: {containers: [{name: a, resources: {requests: {memory: 2Gi}}}]}
`
	daemonSet = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: tenant}
spec: {template: {spec: {containers: [{name: a, resources: {requests: {cpu: "1"}}}]}}}
`
	configMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: tenant}
`
	networkPolicy = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: tenant}
spec: {}
`
)

func TestObjectsUsageCountsAsAMembersResourceQuota(t *testing.T) {
	cases := []struct {
		name      string
		manifests []string
		want      string
	}{
		{"nothing uses nothing", nil, ""},
		{"a Deployment: replicas × requests under both names, limits, pods, its count",
			[]string{bigDeployment},
			"count/deployments.apps=1 cpu=200 limits.cpu=400 memory=50Gi pods=50 requests.cpu=200 requests.memory=50Gi"},
		{"a Job: parallelism × requests (init containers as a maximum), extended resources",
			[]string{sidecarJob},
			"count/jobs.batch=1 cpu=6 limits.nvidia.com/gpu=3 nvidia.com/gpu=3 pods=3 requests.cpu=6 requests.nvidia.com/gpu=3"},
		{"a Pod: one pod", []string{bigPod},
			"count/pods=1 memory=2Gi pods=1 requests.memory=2Gi"},
		{"claims: storage, per storage class, the legacy and count/ names",
			[]string{goldClaim, plainClaim},
			"count/persistentvolumeclaims=2 gold.storageclass.storage.k8s.io/persistentvolumeclaims=1 gold.storageclass.storage.k8s.io/requests.storage=10Gi persistentvolumeclaims=2 requests.storage=11Gi"},
		{"services: load balancers, node ports one per port (none when the load balancer allocates none)",
			[]string{loadBalancer, nodePortsOff, nodePort, clusterIP},
			"count/services=4 services.loadbalancers=2 services.nodeports=3 services=4"},
		{"a DaemonSet's Pods cannot be told: its count only", []string{daemonSet}, "count/daemonsets.apps=1"},
		{"other kinds: their counts", []string{configMap, networkPolicy},
			"configmaps=1 count/configmaps=1 count/networkpolicies.networking.k8s.io=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ObjectsUsage(objects(t, c.manifests...), interpreter.Pods)
			if err != nil {
				t.Fatal(err)
			}
			if render(got) != c.want {
				t.Errorf("ObjectsUsage =\n  %s\nwant\n  %s", render(got), c.want)
			}
		})
	}
}

func TestObjectsUsageRefusesAWorkloadItCannotRead(t *testing.T) {
	bad := objects(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: {replicas: many}}")
	if _, err := ObjectsUsage(bad, interpreter.Pods); err == nil {
		t.Fatal("want an error for spec.replicas: many")
	}
}

func TestFleetSumsResourcesAndTakesTheLargestCountOverMembers(t *testing.T) {
	m1 := list("cpu", "8", "pods", "2", "count/deployments.apps", "1", "services.loadbalancers", "1", "requests.storage", "10Gi",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1")
	m2 := list("cpu", "4", "pods", "1", "count/deployments.apps", "2", "services.loadbalancers", "1", "requests.storage", "10Gi",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1")
	want := "count/deployments.apps=2 cpu=12 gold.storageclass.storage.k8s.io/persistentvolumeclaims=1 pods=3 requests.storage=20Gi services.loadbalancers=1"
	if got := render(Fleet(m1, m2)); got != want {
		t.Errorf("Fleet =\n  %s\nwant\n  %s", got, want)
	}
	if got := render(Fleet()); got != "" {
		t.Errorf("Fleet() = %s, want nothing", got)
	}
}
