package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// file is one entry of an archive or of an image layer.
type file struct {
	name     string      // slash-separated path inside the archive, no leading or trailing slash
	mode     fs.FileMode // permission bits, with fs.ModeDir for a directory
	data     []byte      // the contents, unless src is set
	src      string      // a file to read the contents from (the binaries)
	uid, gid int
}

// contents returns f's bytes.
func (f file) contents() ([]byte, error) {
	if f.src != "" {
		return os.ReadFile(f.src)
	}
	return f.data, nil
}

// withDirs returns files with an entry for each directory they are in
// that has none (0755, owned by root), sorted by name, so that every
// archive lists parents before children in one fixed order.
func withDirs(files []file) []file {
	have := map[string]bool{}
	out := append([]file(nil), files...)
	for _, f := range files {
		have[f.name] = true
	}
	for _, f := range files {
		for dir := path.Dir(f.name); dir != "." && !have[dir]; dir = path.Dir(dir) {
			have[dir] = true
			out = append(out, file{name: dir, mode: fs.ModeDir | 0o755})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// writeTar writes files as a tar stream: every entry with the same time
// (mtime), its own owner ids and no owner names, no device numbers, and
// nothing else of the machine that wrote it.
func writeTar(w io.Writer, files []file, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range withDirs(files) {
		hdr := &tar.Header{
			Name:    f.name,
			Mode:    int64(f.mode.Perm()),
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
			// USTAR when the names fit, as they do; PAX only if they had to.
			Format: tar.FormatUnknown,
		}
		var data []byte
		if f.mode.IsDir() {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		} else {
			var err error
			if data, err = f.contents(); err != nil {
				return err
			}
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// tarBytes is writeTar's output.
func tarBytes(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	err := writeTar(&buf, files, mtime)
	return buf.Bytes(), err
}

// gzipBytes compresses data as gzip with a header that names no file, no
// time and no operating system (Go writes "unknown"), so that the same
// data always gives the same bytes with the same Go release.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeZip writes files as a zip archive, entries sorted, each with the
// time mtime (in UTC: a zip's MS-DOS times have no zone, and the writer
// would otherwise take the machine's) and its Unix mode.
func writeZip(w io.Writer, files []file, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range withDirs(files) {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mtime.UTC()}
		hdr.SetMode(f.mode)
		var data []byte
		if f.mode.IsDir() {
			hdr.Name += "/"
			hdr.Method = zip.Store
		} else {
			var err error
			if data, err = f.contents(); err != nil {
				return err
			}
		}
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return fmt.Errorf("zip %s: %w", f.name, err)
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeFile writes the output of write to name in one go: a file is
// written whole, or the release fails.
func writeFile(name string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}

// archives writes each platform's archive: its binary, LICENSE,
// README.md, the man page and the completions, under a directory named as
// the archive.
func (r *releaser) archives() error {
	for _, p := range r.opts.platforms {
		base := r.baseName(p)
		bin := file{name: base + "/" + filepath.Base(r.bins[p]), mode: 0o755, src: r.bins[p]}
		files := []file{bin}
		for _, name := range []string{"LICENSE", "README.md"} {
			data, err := os.ReadFile(filepath.Join(r.repo.Root, name))
			if err != nil {
				return err
			}
			files = append(files, file{name: base + "/" + name, mode: 0o644, data: data})
		}
		for _, d := range r.docs {
			d.name = base + "/" + d.name
			files = append(files, d)
		}
		var name string
		var err error
		if p.OS == "windows" {
			name = base + ".zip"
			err = writeFile(filepath.Join(r.opts.out, name), func(w io.Writer) error { return writeZip(w, files, r.repo.Time) })
		} else {
			name = base + ".tar.gz"
			err = writeFile(filepath.Join(r.opts.out, name), func(w io.Writer) error {
				t, err := tarBytes(files, r.repo.Time)
				if err != nil {
					return err
				}
				z, err := gzipBytes(t)
				if err != nil {
					return err
				}
				_, err = w.Write(z)
				return err
			})
		}
		if err != nil {
			return err
		}
		r.opts.log("wrote %s", name)
	}
	return nil
}
