// Package fleet runs a Flotilla fleet as local processes: a hub (etcd,
// kube-apiserver, kube-controller-manager, Cluster API's core manager, a
// test infrastructure and control-plane provider, flotilla-manager) and member
// clusters (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok with fake nodes of real capacity). Everything runs on loopback ports
// with the same binaries a user runs; only the machines are simulated.
//
// It is the environment of `make dev` and of the e2e suite's local backend.
// Every process is started in its own process group with a parent-death
// signal, and Stop ends them all, so nothing outlives the fleet.
package fleet
