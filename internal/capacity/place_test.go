package capacity

import (
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestPlaceFillsNodesOneByOneAndLeavesTheRest(t *testing.T) {
	// 3 nodes x 4 cpu hold 12 replicas of 1 cpu.
	m := NewModel(model(nodes(3, resources("cpu", "4", "pods", "110"))))
	oneCPU := NewRequirement(requests("cpu", "1"))
	twoCPU := NewRequirement(requests("cpu", "2"))

	tests := []struct {
		name       string
		place      int64
		wantPlaced int64
		wantOneCPU int64 // replicas of 1 cpu that still fit
		wantTwoCPU int64 // replicas of 2 cpu that still fit: shows node-level packing
	}{
		{"nothing", 0, 0, 12, 6},
		{"one replica leaves 3 cpu on one node", 1, 1, 11, 5},
		{"five replicas: one full node, one node with 3 cpu, one untouched", 5, 5, 7, 3},
		{"eight replicas fill two nodes", 8, 8, 4, 2},
		{"more than fits places what fits", 20, 12, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after, placed := m.Place(oneCPU, tt.place)
			if placed != tt.wantPlaced {
				t.Errorf("placed = %d, want %d", placed, tt.wantPlaced)
			}
			if got := after.Fit(oneCPU); got != tt.wantOneCPU {
				t.Errorf("1-cpu fit after = %d, want %d", got, tt.wantOneCPU)
			}
			if got := after.Fit(twoCPU); got != tt.wantTwoCPU {
				t.Errorf("2-cpu fit after = %d, want %d", got, tt.wantTwoCPU)
			}
		})
	}
	if got := m.Fit(oneCPU); got != 12 {
		t.Errorf("Place changed the original model: fit %d, want 12", got)
	}
}

func TestPlaceRepeatedlyReusesThePartlyUsedNode(t *testing.T) {
	m := NewModel(model(nodes(10, resources("cpu", "64", "pods", "1100"))))
	r := NewRequirement(requests("cpu", "100m"))
	for range 50 {
		m, _ = m.Place(r, 7)
	}
	if got := len(m.groups); got > 3 {
		t.Errorf("model fragmented into %d groups after 50 placements, want at most 3", got)
	}
	if got, want := m.Fit(r), int64(10*640-350); got != want {
		t.Errorf("fit after 350 placed = %d, want %d", got, want)
	}
}

func TestPlaceSkipsGroupsThatDoNotAdmitTheReplica(t *testing.T) {
	m := NewModel(model(
		withLabels(nodes(1, resources("cpu", "4", "pods", "110")), map[string]string{"disk": "hdd"}),
		withLabels(nodes(1, resources("cpu", "4", "pods", "110")), map[string]string{"disk": "ssd"}),
	))
	ssd := NewRequirement(withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{NodeSelector: map[string]string{"disk": "ssd"}}))
	anywhere := NewRequirement(requests("cpu", "1"))
	after, placed := m.Place(ssd, 3)
	if placed != 3 {
		t.Fatalf("placed = %d, want 3", placed)
	}
	if got := after.Fit(anywhere); got != 5 {
		t.Errorf("fit anywhere after = %d, want 4 (hdd) + 1 (ssd)", got)
	}
}
