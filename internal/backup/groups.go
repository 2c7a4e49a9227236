package backup

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// WriteGroupsHeader writes the start of a format-2 backup to w: hdr, whose
// Groups lists the parts that are to follow, each then written by Write
// (the first group's last).
func WriteGroupsHeader(w io.Writer, hdr Header) error {
	if len(hdr.Groups) == 0 {
		return errors.New("a backup of several groups lists them")
	}
	head, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	b := make([]byte, 16, 16+len(head)+sha256.Size)
	copy(b[:8], Magic)
	binary.BigEndian.PutUint32(b[8:12], GroupsVersion)
	binary.BigEndian.PutUint32(b[12:16], uint32(len(head)))
	b = append(b, head...)
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	_, err = w.Write(b)
	return err
}

// File is a backup being read, of either format: its parts come one after
// another from Next.
type File struct {
	// Header is the file's header: a format-1 backup's own, or a format-2
	// backup's (whose Groups lists its parts).
	Header Header
	// Version is the file's format version.
	Version uint32

	br    *bufio.Reader
	first io.Reader // a format-1 file's snapshot, not yet handed out
	next  int       // of Header.Groups
	prev  io.Reader // the part handed out last
}

// Open reads the start of a backup file from r. A format-1 file's header
// is read whole, and the rest is read by Next.
func Open(r io.Reader) (*File, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	pre, err := br.Peek(12)
	if err != nil || string(pre[:8]) != Magic {
		// Read says what is wrong with it.
		_, _, err := Read(br)
		if err == nil {
			err = ErrNotBackup
		}
		return nil, err
	}
	switch v := binary.BigEndian.Uint32(pre[8:12]); v {
	case FormatVersion:
		hdr, snap, err := Read(br)
		if err != nil {
			return nil, err
		}
		return &File{Header: hdr, Version: v, br: br, first: snap}, nil
	case GroupsVersion:
		hdr, err := readGroupsHeader(br)
		if err != nil {
			return nil, err
		}
		return &File{Header: hdr, Version: v, br: br}, nil
	default:
		return nil, tooNew(v)
	}
}

// readGroupsHeader reads a format-2 backup's header and checks it.
func readGroupsHeader(br *bufio.Reader) (Header, error) {
	var pre [16]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return Header{}, fmt.Errorf("%w: %v", ErrNotBackup, err)
	}
	n := binary.BigEndian.Uint32(pre[12:16])
	if n > maxHeader {
		return Header{}, fmt.Errorf("%w: a header of %d bytes", ErrDamaged, n)
	}
	rest := make([]byte, int(n)+sha256.Size)
	if _, err := io.ReadFull(br, rest); err != nil {
		return Header{}, fmt.Errorf("%w: the header: %v", ErrDamaged, err)
	}
	head, stored := rest[:n], rest[n:]
	sum := sha256.New()
	sum.Write(pre[:])
	sum.Write(head)
	if got := sum.Sum(nil); string(got) != string(stored) {
		return Header{}, fmt.Errorf("%w: the header's checksum does not match", ErrDamaged)
	}
	var hdr Header
	if err := json.Unmarshal(head, &hdr); err != nil {
		return Header{}, fmt.Errorf("%w: the header: %v", ErrDamaged, err)
	}
	sorted := slices.Clone(hdr.Groups)
	slices.Sort(sorted)
	if len(hdr.Groups) == 0 || len(slices.Compact(sorted)) != len(hdr.Groups) || hdr.Groups[len(hdr.Groups)-1] != 0 {
		return Header{}, fmt.Errorf("%w: its header lists the groups %v: each once, the first group (0) last", ErrDamaged, hdr.Groups)
	}
	return hdr, nil
}

// Next returns the next part's header and a reader of its snapshot, which
// checks the part's checksum at its end as Read's does; io.EOF once every
// part was returned. A part must be read to its end before the next is
// asked for: what is left of it is read, and checked, first.
func (f *File) Next() (Header, io.Reader, error) {
	if f.prev != nil {
		if _, err := io.Copy(io.Discard, f.prev); err != nil {
			return Header{}, nil, err
		}
		f.prev = nil
	}
	if f.Version == FormatVersion {
		if f.first == nil {
			return Header{}, nil, io.EOF
		}
		f.prev, f.first = f.first, nil
		return f.Header, f.prev, nil
	}
	if f.next == len(f.Header.Groups) {
		return Header{}, nil, io.EOF
	}
	want := f.Header.Groups[f.next]
	hdr, snap, err := Read(f.br)
	if err != nil {
		if errors.Is(err, ErrNotBackup) {
			// The file ends, or holds something else, where a part was due.
			err = fmt.Errorf("%w: part %d of %d (group %d): %v", ErrDamaged, f.next+1, len(f.Header.Groups), want, err)
		}
		return Header{}, nil, err
	}
	if hdr.Shard != want {
		return Header{}, nil, fmt.Errorf("%w: part %d is of group %d, where the header lists group %d", ErrDamaged, f.next+1, hdr.Shard, want)
	}
	if hdr.Region != f.Header.Region {
		return Header{}, nil, fmt.Errorf("%w: part %d is of region %s, the backup of %s", ErrDamaged, f.next+1, hdr.Region, f.Header.Region)
	}
	f.next++
	f.prev = snap
	return hdr, snap, nil
}
