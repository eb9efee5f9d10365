package framework

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// Snapshot is an immutable view of the fleet for a run of decisions. Members
// are sorted by name, so results never depend on the order of the input list.
type Snapshot struct {
	members []Member
	byName  map[string]int

	// names and models mirror members for callers that read every member.
	names  []string
	models []*capacity.Model

	// served caches, per resource kind, which members serve it: decisions
	// for one kind repeat the same question for every member.
	servedMu sync.Mutex
	served   map[apiKey][]bool
}

// NewSnapshot compiles members. It fails on duplicate or empty names, which
// would make decisions ambiguous.
func NewSnapshot(members []clusterv1alpha1.MemberCluster) (*Snapshot, error) {
	s := &Snapshot{members: make([]Member, 0, len(members)), byName: make(map[string]int, len(members))}
	for i := range members {
		if members[i].Name == "" {
			return nil, fmt.Errorf("member #%d has no name", i)
		}
		s.members = append(s.members, compileMember(&members[i]))
	}
	slices.SortFunc(s.members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	s.names = make([]string, len(s.members))
	s.models = make([]*capacity.Model, len(s.members))
	for i := range s.members {
		s.members[i].Index = i
		s.names[i], s.models[i] = s.members[i].Name, s.members[i].Model
		if _, dup := s.byName[s.members[i].Name]; dup {
			return nil, fmt.Errorf("member %s listed twice", s.members[i].Name)
		}
		s.byName[s.members[i].Name] = i
	}
	return s, nil
}

// Len is the number of members.
func (s *Snapshot) Len() int { return len(s.members) }

// Member is the member at index i (0 <= i < Len). Callers must not modify it.
func (s *Snapshot) Member(i int) *Member { return &s.members[i] }

// Lookup finds a member by name.
func (s *Snapshot) Lookup(name string) (*Member, bool) {
	i, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return &s.members[i], true
}

// Names lists member names by index. Callers must not modify it.
func (s *Snapshot) Names() []string { return s.names }

// Models lists member capacity models by index (nil: none). Callers must not modify it.
func (s *Snapshot) Models() []*capacity.Model { return s.models }

// ServedBy says, by member index, which members serve kind in groupVersion.
// The answer is computed once per kind and shared; callers must not modify it.
func (s *Snapshot) ServedBy(groupVersion, kind string) []bool {
	key := apiKey{groupVersion, kind}
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	if served, ok := s.served[key]; ok {
		return served
	}
	served := make([]bool, len(s.members))
	for i := range s.members {
		served[i] = s.members[i].Serves(groupVersion, kind)
	}
	if s.served == nil {
		s.served = map[apiKey][]bool{}
	}
	s.served[key] = served
	return served
}
