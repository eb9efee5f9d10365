//go:build tools

// Package coredns pins CoreDNS for the offline kind node image
// (hack/kindimage): the version kubeadm v1.36.3 lists.
package coredns

import (
	_ "github.com/coredns/coredns"
)
