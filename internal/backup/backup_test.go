package backup

import (
	"bytes"
	"errors"
	"io"
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
	if err != nil || got != hdr {
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
