package shards

import (
	"context"
	"slices"
	"testing"

	"github.com/fifoq/fifoq/internal/engine"
)

// TestLeavingMarkNamesAnIncarnation: a member marked leaving is counted
// out of the voters the map places replicas on, unless it is the only
// one; a mark made for another incarnation of the member (one removed
// and added again with an empty data dir) is not read; Drained clears
// the mark.
func TestLeavingMarkNamesAnIncarnation(t *testing.T) {
	host, set := openMember(t, t.TempDir(), 2)
	ctx := context.Background()
	members, err := host.Members()
	if err != nil || len(members) != 1 {
		t.Fatalf("members %v, %v", members, err)
	}
	mark := func(value string) {
		t.Helper()
		if _, err := host.Apply(ctx, &engine.Command{Request: &engine.SetMetaRequest{Key: leavingKey("n1"), Value: value}}); err != nil {
			t.Fatal(err)
		}
	}
	inc := members[0].Incarnation
	if inc == "" {
		inc = noIncarnation
	}
	for _, tc := range []struct {
		mark    string
		leaving bool
	}{{inc, true}, {"an-older-incarnation", false}, {noIncarnation, true}} {
		mark(tc.mark)
		if got := set.leaving(members)["n1"]; got != tc.leaving {
			t.Errorf("mark %q: leaving %v, want %v", tc.mark, got, tc.leaving)
		}
	}
	// The only voter keeps its replicas: there is nowhere to move them.
	if voters, _, err := set.voters(); err != nil || len(voters) != 1 {
		t.Fatalf("voters of a cluster whose one member is leaving: %v, %v; want it", voters, err)
	}
	if got := withoutLeaving([]string{"n1", "n2", "n3"}, map[string]bool{"n2": true}); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Fatalf("withoutLeaving: %v", got)
	}
	if err := set.Drained(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if set.leaving(members)["n1"] {
		t.Fatal("the mark outlived Drained")
	}
}
