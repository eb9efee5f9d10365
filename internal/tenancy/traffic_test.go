package tenancy

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAServiceWithExternalIPsIsRenderedOnlyWhereAClusterAdminAllowedIt(t *testing.T) {
	service := func(kind string, ips ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": "web", "namespace": "tenant-a"}, "spec": map[string]any{}}}
		if len(ips) > 0 {
			u.Object["spec"].(map[string]any)["externalIPs"] = ips
		}
		return u
	}
	allowed := map[string]string{"policy.flotilla.io/allow-external-ips": "true"}
	for _, tc := range []struct {
		name   string
		obj    *unstructured.Unstructured
		labels map[string]string
		want   string // "" for rendered
	}{
		{name: "a Service without externalIPs", obj: service("Service")},
		{name: "a Service with externalIPs", obj: service("Service", "203.0.113.10", "203.0.113.11"),
			want: "v1 Service tenant-a/web is not rendered: spec.externalIPs (203.0.113.10, 203.0.113.11) would make every node of the member answer for those addresses"},
		{name: "a Service with externalIPs in a namespace labelled something else", obj: service("Service", "203.0.113.10"),
			labels: map[string]string{"policy.flotilla.io/allow-external-ips": "yes"}, want: "CVE-2020-8554"},
		{name: "a Service with externalIPs where a cluster admin allowed them", obj: service("Service", "203.0.113.10"), labels: allowed},
		{name: "another kind with the same field", obj: service("Gateway", "203.0.113.10")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := 0
			err := GrabsTraffic(tc.obj, func(ns string) (map[string]string, error) {
				read++
				if ns != "tenant-a" {
					t.Errorf("read the labels of namespace %q, want tenant-a", ns)
				}
				return tc.labels, nil
			})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var v *Violation
			if !errors.As(err, &v) || !strings.Contains(v.Error(), tc.want) {
				t.Fatalf("got %v, want a Violation containing %q", err, tc.want)
			}
			if !strings.Contains(v.Error(), "labelling the hub namespace tenant-a policy.flotilla.io/allow-external-ips=true") {
				t.Errorf("the message does not say how a cluster admin allows it: %v", v)
			}
		})
	}
	if err := GrabsTraffic(service("Service"), func(string) (map[string]string, error) {
		t.Error("the namespace is read for a Service without externalIPs")
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := GrabsTraffic(service("Service", "203.0.113.10"), func(string) (map[string]string, error) {
		return nil, errors.New("cache not synced")
	}); err == nil || errors.As(err, new(*Violation)) {
		t.Fatalf("a failed namespace read gave %v, want that transient error", err)
	}
}
