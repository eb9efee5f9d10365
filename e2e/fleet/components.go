package fleet

import (
	"path/filepath"
)

// controllerManager is kube-controller-manager for a control plane: it runs
// Deployments, ReplicaSets, ServiceAccount tokens, quota and node lifecycle,
// exactly as in a real cluster.
func controllerManager(cp *controlPlane) *process {
	pki := filepath.Join(cp.dir, "pki")
	return newProcess("kube-controller-manager", filepath.Join(cp.bin, "kube-controller-manager"), filepath.Join(cp.dir, "logs"),
		"--kubeconfig="+cp.Kubeconfig,
		"--authentication-kubeconfig="+cp.Kubeconfig,
		"--authorization-kubeconfig="+cp.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "serving.crt"),
		"--use-service-account-credentials=true",
		"--cluster-signing-duration=8760h",
		// Faults show up in seconds rather than minutes.
		"--node-monitor-grace-period=20s",
		"--node-monitor-period=2s",
		"--v=1",
	)
}

// scheduler is kube-scheduler for a member.
func scheduler(cp *controlPlane) *process {
	return newProcess("kube-scheduler", filepath.Join(cp.bin, "kube-scheduler"), filepath.Join(cp.dir, "logs"),
		"--kubeconfig="+cp.Kubeconfig,
		"--authentication-kubeconfig="+cp.Kubeconfig,
		"--authorization-kubeconfig="+cp.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--v=1",
	)
}

// kwokNodeAnnotation marks the Nodes kwok manages; removing it is how a
// node's "kubelet" dies.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// kwok simulates the kubelets of a member's fake Nodes: it marks them Ready,
// renews their Leases and runs their Pods to Ready, with the fast stages
// shipped in the kwok module.
func kwok(cp *controlPlane) *process {
	return newProcess("kwok", filepath.Join(cp.bin, "kwok"), filepath.Join(cp.dir, "logs"),
		"--kubeconfig="+cp.Kubeconfig,
		"--config="+filepath.Join(cp.bin, "kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16",
		"--node-ip=127.0.0.1",
		"--server-address=127.0.0.1:0",
	)
}
