// Command flotilla-estimator runs in every member (installed by a
// ClusterResourceSet) and publishes the member's capacity model to the
// ConfigMap flotilla-system/flotilla-capacity-model; see addon/estimator.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/addon/estimator"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	model "github.com/flotilla-io/flotilla/internal/estimator"
)

func main() {
	cfg := estimator.Config{Model: model.DefaultOptions()}
	var kubeconfig, cpuQuantum, memQuantum string
	fs := pflag.CommandLine
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the member; in-cluster configuration when empty.")
	fs.StringVar(&cfg.Namespace, "namespace", clusterv1alpha1.SystemNamespace, "Namespace of the ConfigMap the model is published to.")
	fs.StringVar(&cfg.ConfigMap, "configmap", clusterv1alpha1.CapacityModelConfigMap, "Name of the ConfigMap the model is published to.")
	fs.DurationVar(&cfg.PublishInterval, "publish-interval", 10*time.Second, "Publish the model at most this often, however fast Nodes and Pods change.")
	fs.DurationVar(&cfg.MaxStaleness, "max-staleness", 5*time.Minute, "Republish an unchanged model this often, as a heartbeat.")
	fs.IntVar(&cfg.Model.MaxGroups, "max-node-groups", cfg.Model.MaxGroups, "Coarsen the free-resource quanta (rounding down) while the model has more node groups; 0 disables.")
	fs.StringSliceVar(&cfg.Model.IgnoredLabels, "ignore-node-label", cfg.Model.IgnoredLabels, "Node label keys that differ per node and are left out of node groups.")
	fs.StringVar(&cpuQuantum, "cpu-quantum", "10m", "Free CPU per node is rounded down to a multiple of this; 0 keeps it exact.")
	fs.StringVar(&memQuantum, "memory-quantum", "1Mi", "Free memory and ephemeral storage per node are rounded down to a multiple of this; 0 keeps them exact.")
	klog.InitFlags(flag.CommandLine)
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctrl.SetLogger(klog.Background())

	if err := run(kubeconfig, cpuQuantum, memQuantum, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-estimator:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, cpuQuantum, memQuantum string, cfg estimator.Config) error {
	cpu, err := resource.ParseQuantity(cpuQuantum)
	if err != nil {
		return fmt.Errorf("--cpu-quantum: %w", err)
	}
	mem, err := resource.ParseQuantity(memQuantum)
	if err != nil {
		return fmt.Errorf("--memory-quantum: %w", err)
	}
	cfg.Model.Quanta = corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem, corev1.ResourceEphemeralStorage: mem}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("member kubeconfig: %w", err)
	}
	rc.UserAgent = "flotilla-estimator"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("member client: %w", err)
	}
	return estimator.Run(ctrl.SetupSignalHandler(), cs, cfg)
}
