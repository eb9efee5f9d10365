package division

import (
	"errors"
	"slices"
	"testing"
)

// weighted builds members a, b, c… with the given weights and no capacity bound.
func weighted(weights ...int64) []Member {
	ms := make([]Member, len(weights))
	for i, w := range weights {
		ms[i] = Member{Name: string(rune('a' + i)), Weight: w, Capacity: Unlimited}
	}
	return ms
}

func withCapacity(ms []Member, caps ...int64) []Member {
	for i, c := range caps {
		ms[i].Capacity = c
	}
	return ms
}

func withCurrent(ms []Member, current ...int64) []Member {
	for i, c := range current {
		ms[i].Current = c
	}
	return ms
}

func TestApportionIsWebsterWithStatedTieBreaks(t *testing.T) {
	tests := []struct {
		name    string
		total   int64
		members []Member
		want    []int64
	}{
		{"2 replicas at 2:1 give 1:1 (a1=2 > b1=1 > a2=2/3)", 2, weighted(2, 1), []int64{1, 1}},
		{"7 replicas at 1:1:1 give 3:2:2 (ties by name)", 7, weighted(1, 1, 1), []int64{3, 2, 2}},
		{"8 replicas at 1:1:1 give 3:3:2", 8, weighted(1, 1, 1), []int64{3, 3, 2}},
		{"exact quotas are kept: 100 at 1:2:3:4", 100, weighted(1, 2, 3, 4), []int64{10, 20, 30, 40}},
		{"equal priority goes to the higher weight: 2 at 3:1 (a2 = b1 = 1)", 2, weighted(3, 1), []int64{2, 0}},
		{"equal priority and weight goes to the larger capacity", 1, withCapacity(weighted(1, 1), 5, 9), []int64{0, 1}},
		{"name order, not input order, breaks ties", 3, []Member{{Name: "b", Weight: 1, Capacity: Unlimited}, {Name: "a", Weight: 1, Capacity: Unlimited}}, []int64{1, 2}},
		{"capacity caps a member; the rest goes elsewhere", 10, withCapacity(weighted(1, 1), 3, Unlimited), []int64{3, 7}},
		{"weight 0 takes nothing", 5, weighted(0, 1), []int64{0, 5}},
		{"zero replicas", 0, weighted(1, 1), []int64{0, 0}},
		{"Webster may give less than an exact quota: 11 at 99:6:10:6 (a's quota is 9)", 11, weighted(99, 6, 10, 6), []int64{8, 1, 1, 1}},
		{"Webster rounds 0.5 quotas fairly: 5 at 1:1:1:1:1:1 (ties by name)", 5, weighted(1, 1, 1, 1, 1, 1), []int64{1, 1, 1, 1, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apportion(tt.total, tt.members)
			if err != nil {
				t.Fatalf("Apportion: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Apportion = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestApportionFailsWhenCapacityIsShort(t *testing.T) {
	_, err := Apportion(10, withCapacity(weighted(1, 1, 0), 3, 4, 100))
	var short *InsufficientCapacityError
	if !errors.As(err, &short) || short.Want != 10 || short.Have != 7 {
		t.Fatalf("err = %v, want insufficient capacity 10 asked, 7 held (weightless members do not count)", err)
	}
}

func TestApportionRejectsNegativeInput(t *testing.T) {
	if _, err := Apportion(-1, weighted(1)); err == nil {
		t.Error("negative replicas accepted")
	}
	if _, err := Apportion(1, weighted(-1)); err == nil {
		t.Error("negative weight accepted")
	}
}

func TestAdjustMovesAsFewReplicasAsPossible(t *testing.T) {
	tests := []struct {
		name    string
		total   int64
		members []Member
		want    []int64
	}{
		{"scale-up adds the next best seat only: 3,2,2 -> 8", 8, withCurrent(weighted(1, 1, 1), 3, 2, 2), []int64{3, 3, 2}},
		{"scale-up leaves an unbalanced member alone and fills the others", 7, withCurrent(weighted(1, 1), 5, 0), []int64{5, 2}},
		{"scale-down removes the worst-held seats: 5,5 -> 7", 7, withCurrent(weighted(1, 1), 5, 5), []int64{4, 3}},
		{"scale-down by weight 2:1 from 3,3 to 3 removes b3, b2, a3", 3, withCurrent(weighted(2, 1), 3, 3), []int64{2, 1}},
		{"unchanged total keeps everything", 10, withCurrent(weighted(1, 9), 5, 5), []int64{5, 5}},
		{"replicas beyond capacity move elsewhere", 6, withCapacity(withCurrent(weighted(1, 1), 6, 0), 4, Unlimited), []int64{4, 2}},
		{"a weightless member keeps its replicas on scale-up", 5, withCurrent(weighted(0, 1), 2, 0), []int64{2, 3}},
		{"a weightless member loses its replicas first on scale-down", 1, withCurrent(weighted(0, 1), 2, 3), []int64{0, 1}},
		{"a member missing from the current division joins only on scale-up", 4, withCurrent(weighted(1, 1, 1), 2, 2, 0), []int64{2, 2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Adjust(tt.total, tt.members)
			if err != nil {
				t.Fatalf("Adjust: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Adjust = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdjustFailsWhenCapacityIsShort(t *testing.T) {
	_, err := Adjust(10, withCurrent(withCapacity(weighted(0, 1), 5, 4), 3, 0))
	var short *InsufficientCapacityError
	if !errors.As(err, &short) || short.Have != 3+4 {
		t.Fatalf("err = %v, want insufficient capacity with 7 held (3 kept by the weightless member + 4)", err)
	}
}

func TestAggregateUsesFewestMembersLargestFirst(t *testing.T) {
	caps := func(c ...int64) []Member { return withCapacity(weighted(1, 1, 1), c...) }
	tests := []struct {
		name      string
		total     int64
		members   []Member
		mandatory int
		want      []int64
	}{
		{"one member can hold all: the largest", 25, caps(10, 30, 20), 0, []int64{0, 25, 0}},
		{"two needed: the two largest, divided by capacity 30:20", 45, caps(10, 30, 20), 0, []int64{0, 27, 18}},
		{"equal capacity: by name", 10, caps(20, 20, 5), 0, []int64{10, 0, 0}},
		{"members already holding replicas are kept and grown first", 10, withCurrent(caps(10, 30, 20), 0, 0, 5), 0, []int64{0, 0, 10}},
		{"when the holders cannot grow enough the largest others join", 40, withCurrent(caps(10, 30, 20), 0, 0, 15), 0, []int64{0, 24, 16}},
		{"scale-down keeps the same members", 3, withCurrent(caps(10, 30, 20), 0, 4, 2), 0, []int64{0, 2, 1}},
		{"mandatory members are used even when others are larger", 5, caps(10, 30, 20), 1, []int64{5, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Aggregate(tt.total, tt.members, tt.mandatory)
			if err != nil {
				t.Fatalf("Aggregate: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Aggregate = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAggregateFailsWhenCapacityIsShort(t *testing.T) {
	_, err := Aggregate(61, withCapacity(weighted(1, 1, 1), 10, 30, 20), 0)
	var short *InsufficientCapacityError
	if !errors.As(err, &short) || short.Have != 60 {
		t.Fatalf("err = %v, want insufficient capacity with 60 held", err)
	}
}
