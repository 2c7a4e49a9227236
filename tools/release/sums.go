package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// sumsName is the checksum file, which lists every other file.
const sumsName = "SHA256SUMS"

// writeSums writes dir/SHA256SUMS in the format of sha256sum (a digest,
// two spaces, a path relative to dir), so that `sha256sum -c SHA256SUMS`
// run in dir checks the release, the OCI layout's files included.
func writeSums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == sumsName {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+filepath.ToSlash(rel)+"\n")
		return nil
	})
	if err != nil {
		return err
	}
	// Sorted by path, whatever order the directory was read in.
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	return os.WriteFile(filepath.Join(dir, sumsName), []byte(strings.Join(lines, "")), 0o644)
}
