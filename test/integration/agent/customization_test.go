package agent_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestAgentJudgesHealthWithTheHubsCustomizations: a Pull member's agent
// reads the hub's ResourceInterpreterCustomizations with its own
// credentials, and judges what it applies with them, as the hub does for
// Push members: here a ConfigMap is healthy only once its data says ready.
func TestAgentJudgesHealthWithTheHubsCustomizations(t *testing.T) {
	ric := &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-readiness"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "v1", Kind: "ConfigMap"},
			Customizations: configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.LuaScript{
				LuaScript: "function InterpretHealth(observedObj)\n  return observedObj.data.value == \"ready\"\nend\n",
			}},
		},
	}
	if err := hub.Client.Create(ctx(), ric); err != nil {
		t.Fatalf("create the customization: %v", err)
	}
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), ric) })

	health := func(w *workv1alpha1.Work, want workv1alpha1.ResourceHealth, message string) func() error {
		return func() error {
			if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			if len(w.Status.ManifestStatuses) != 1 {
				return fmt.Errorf("manifest statuses %+v", w.Status.ManifestStatuses)
			}
			st := w.Status.ManifestStatuses[0]
			if st.Health != want || !strings.Contains(st.Message, message) {
				return fmt.Errorf("health %s (%q), want %s (%q)", st.Health, st.Message, want, message)
			}
			return nil
		}
	}
	w := createWork(t, edge, "judged", manifest(t, configMap("judged", "gate", "waiting")))
	eventually(t, "the agent's verdict by the customization: Unhealthy", health(w, workv1alpha1.ResourceUnhealthy,
		"InterpretHealth of ResourceInterpreterCustomization configmap-readiness returned false"))
	updateWork(t, w, manifest(t, configMap("judged", "gate", "ready")))
	eventually(t, "Healthy once the data says ready", health(w, workv1alpha1.ResourceHealthy, ""))
}
