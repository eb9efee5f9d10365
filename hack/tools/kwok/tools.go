//go:build tools

// Package kwok pins kwok, which simulates kubelets on fake Nodes in member clusters.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
