package interpreter

import (
	"slices"
	"strings"
	"testing"
)

// podSpec is every kind of reference, some of them twice.
const podSpec = `serviceAccountName: web-sa
imagePullSecrets: [{name: registry}]
volumes:
- {name: a, configMap: {name: settings}}
- {name: b, secret: {secretName: tls}}
- {name: c, persistentVolumeClaim: {claimName: data}}
- name: d
  projected:
    sources:
    - configMap: {name: projected-cm}
    - secret: {name: projected-secret}
    - serviceAccountToken: {path: token}
- {name: e, emptyDir: {}}
initContainers:
- name: init
  envFrom: [{configMapRef: {name: init-env}}]
containers:
- name: app
  envFrom: [{secretRef: {name: app-env}}, {configMapRef: {name: settings}}]
  env:
  - {name: A, value: plain}
  - {name: B, valueFrom: {configMapKeyRef: {name: keyed-cm, key: k}}}
  - {name: C, valueFrom: {secretKeyRef: {name: keyed-secret, key: k}}}
  - {name: D, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
`

// indent shifts every line of block right by depth levels of two spaces.
func indent(block string, depth int) string {
	pad := strings.Repeat("  ", depth)
	return pad + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n"+pad) + "\n"
}

var everyReference = []Dependency{
	{ConfigMapKind, "init-env"}, {ConfigMapKind, "keyed-cm"}, {ConfigMapKind, "projected-cm"}, {ConfigMapKind, "settings"},
	{PersistentVolumeClaimKind, "data"},
	{SecretKind, "app-env"}, {SecretKind, "keyed-secret"}, {SecretKind, "projected-secret"}, {SecretKind, "registry"}, {SecretKind, "tls"},
	{ServiceAccountKind, "web-sa"},
}

func TestGetDependenciesListsEveryReferenceOnceSortedForEachWorkloadKind(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
	}{
		{"Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n" + indent(podSpec, 3)},
		{"StatefulSet", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n" + indent(podSpec, 3)},
		{"DaemonSet", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n" + indent(podSpec, 3)},
		{"Job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n" + indent(podSpec, 3)},
		{"CronJob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: w}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" + indent(podSpec, 5)},
		{"Pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n" + indent(podSpec, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := GetDependencies(object(t, tt.manifest))
			if err != nil {
				t.Fatalf("Of: %v", err)
			}
			if !slices.Equal(got, everyReference) {
				t.Errorf("Of =\n%v\nwant\n%v", got, everyReference)
			}
		})
	}
}

func TestGetDependenciesSkipsTheDefaultServiceAccountAndKindsWithoutPods(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []Dependency
	}{
		{"the default ServiceAccount", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      serviceAccountName: default\n      containers: [{name: c}]", nil},
		{"a ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}", nil},
		{"a Deployment of another group", "apiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      serviceAccountName: sa", nil},
		{"a Deployment without a template", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := GetDependencies(object(t, tt.manifest))
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Of = %v, %v; want %v, nil", got, err, tt.want)
			}
		})
	}
}
