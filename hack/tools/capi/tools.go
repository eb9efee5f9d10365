//go:build tools

// Package capi pins Cluster API's core manager, which the local fleet runs on
// the hub exactly as a management cluster does.
package capi

import _ "sigs.k8s.io/cluster-api/core"
