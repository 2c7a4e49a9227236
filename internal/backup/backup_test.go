package backup

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRoundTrip writes a backup and reads it back.
func TestRoundTrip(t *testing.T) {
	snap := strings.Repeat("snapshot bytes ", 100_000)
	var buf bytes.Buffer
	hdr := Header{Created: time.Unix(1, 0).UTC(), Node: "n1", Region: "eu-west-1", Index: 42, Term: 3, Size: int64(len(snap)), Messages: 7}
	n, err := Write(&buf, hdr, strings.NewReader(snap))
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("Write: %d, %v (wrote %d)", n, err, buf.Len())
	}
	got, r, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil || !reflect.DeepEqual(got, hdr) {
		t.Fatalf("Read: %+v, %v", got, err)
	}
	b, err := io.ReadAll(r)
	if err != nil || string(b) != snap {
		t.Fatalf("snapshot read back: %d bytes, %v", len(b), err)
	}
}

// TestDamageDetected flips every byte of a small backup in turn, and cuts
// it at every length: each read must fail, never hand back a snapshot as
// whole.
func TestDamageDetected(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Write(&buf, Header{Size: 10}, strings.NewReader("0123456789")); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	try := func(data []byte) error {
		_, r, err := Read(bytes.NewReader(data))
		if err != nil {
			return err
		}
		_, err = io.ReadAll(r)
		return err
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if err := try(bad); err == nil {
			t.Fatalf("a backup with byte %d flipped read as whole", i)
		}
	}
	for n := range len(good) {
		if err := try(good[:n]); err == nil {
			t.Fatalf("a backup cut at %d of %d bytes read as whole", n, len(good))
		}
	}
	if err := try([]byte("PK\x03\x04 something else entirely")); !errors.Is(err, ErrNotBackup) {
		t.Fatalf("a zip file: %v", err)
	}
}

// FuzzRead feeds Read arbitrary input: it must never panic, and never
// hand back as whole a snapshot whose checksum does not match.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	_, _ = Write(&buf, Header{Size: 3}, strings.NewReader("abc"))
	f.Add(buf.Bytes())
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, r, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		_, _ = io.ReadAll(r)
	})
}

// groupsBackup writes a format-2 backup of the given parts (shard →
// snapshot), in the order of groups.
func groupsBackup(t testing.TB, groups []uint32, snaps map[uint32]string) []byte {
	var buf bytes.Buffer
	if err := WriteGroupsHeader(&buf, Header{Node: "n1", Region: "eu-west-1", Groups: groups}); err != nil {
		t.Fatal(err)
	}
	for _, id := range groups {
		if _, err := Write(&buf, Header{Region: "eu-west-1", Shard: id, Index: uint64(10 + id), Size: int64(len(snaps[id]))}, strings.NewReader(snaps[id])); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// readAll reads every part of a backup, as a restore does.
func readAll(data []byte) (map[uint32]string, error) {
	f, err := Open(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out := map[uint32]string{}
	for {
		hdr, r, err := f.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out[hdr.Shard] = string(b)
	}
}

// TestGroupsRoundTrip writes a backup of several groups and reads every
// part back; Open reads a backup of one group as one part.
func TestGroupsRoundTrip(t *testing.T) {
	snaps := map[uint32]string{2: strings.Repeat("two ", 100_000), 1: "one", 0: strings.Repeat("zero ", 70_000)}
	got, err := readAll(groupsBackup(t, []uint32{2, 1, 0}, snaps))
	if err != nil || !reflect.DeepEqual(got, snaps) {
		t.Fatalf("read back %d parts, %v", len(got), err)
	}
	var one bytes.Buffer
	if _, err := Write(&one, Header{Size: 3}, strings.NewReader("abc")); err != nil {
		t.Fatal(err)
	}
	got, err = readAll(one.Bytes())
	if err != nil || !reflect.DeepEqual(got, map[uint32]string{0: "abc"}) {
		t.Fatalf("a backup of one group read through Open: %v, %v", got, err)
	}
	// A reader of one group's backups refuses several, rather than read
	// the first part as if it were all.
	if _, _, err := Read(bytes.NewReader(groupsBackup(t, []uint32{1, 0}, snaps))); !errors.Is(err, ErrNotBackup) {
		t.Fatalf("Read of a backup of several groups: %v", err)
	}
}

// TestGroupsDamageDetected flips every byte of a small backup of several
// groups in turn, and cuts it at every length: reading its parts must
// fail, never end as if it were whole.
func TestGroupsDamageDetected(t *testing.T) {
	good := groupsBackup(t, []uint32{3, 0}, map[uint32]string{3: "three", 0: "zero"})
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := readAll(bad); err == nil {
			t.Fatalf("a backup with byte %d flipped read as whole", i)
		}
	}
	for n := range len(good) {
		if _, err := readAll(good[:n]); err == nil {
			t.Fatalf("a backup cut at %d of %d bytes read as whole", n, len(good))
		}
	}
	// Headers that list the groups wrongly.
	for _, groups := range [][]uint32{{0, 3}, {3, 3, 0}, {3}} {
		var buf bytes.Buffer
		if err := WriteGroupsHeader(&buf, Header{Groups: groups}); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(&buf); !errors.Is(err, ErrDamaged) {
			t.Fatalf("a header listing groups %v: %v", groups, err)
		}
	}
}

// FuzzOpen feeds Open and Next arbitrary input: they must never panic,
// and never end as whole a backup whose checksums do not match.
func FuzzOpen(f *testing.F) {
	f.Add(groupsBackup(f, []uint32{1, 0}, map[uint32]string{1: "a", 0: "b"}))
	var buf bytes.Buffer
	_, _ = Write(&buf, Header{Size: 3}, strings.NewReader("abc"))
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = readAll(data)
	})
}
