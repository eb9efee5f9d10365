//go:build tools

// Package kindnode pins the Kubernetes binaries of the offline kind node image
// (hack/kindimage): kubelet, kubeadm and kubectl on the node, and the
// control-plane images kube-apiserver, kube-controller-manager,
// kube-scheduler and kube-proxy. Same version as hack/tools/kube.
package kindnode

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
