package engine

import (
	"bytes"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// TestMetaSurvivesSnapshots: the command log's metadata is set and removed
// by SetMetaRequest, kept across a snapshot and restore, and bounded.
func TestMetaSurvivesSnapshots(t *testing.T) {
	h := newHarness(t)
	set := func(k, v string) error {
		_, err := h.raw(api.QueueKey{}, &SetMetaRequest{Key: k, Value: v})
		return err
	}
	if err := set("member/n1", "0123"); err != nil {
		t.Fatal(err)
	}
	if err := set("member/n2", "4567"); err != nil {
		t.Fatal(err)
	}
	if err := set("member/n2", ""); err != nil {
		t.Fatal(err)
	}
	if err := set("", "x"); err == nil {
		t.Fatal("an empty key was taken")
	}
	if err := set("k", string(make([]byte, maxMetaValue+1))); err == nil {
		t.Fatal("a value over the bound was taken")
	}
	into := New(Config{Region: testRegion})
	if err := into.Restore(bytes.NewReader(snapshotBytes(t, h.e))); err != nil {
		t.Fatal(err)
	}
	if got := into.Meta("member/n1"); got != "0123" {
		t.Fatalf("restored metadata member/n1 = %q, want 0123", got)
	}
	if got := into.Meta("member/n2"); got != "" {
		t.Fatalf("restored metadata member/n2 = %q, want it removed", got)
	}
}
