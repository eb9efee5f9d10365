//go:build tools

// Package kube pins the Kubernetes control-plane binaries that tests run
// against: a real kube-apiserver, kube-controller-manager and kube-scheduler.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
