package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/backup"
	"github.com/fifoq/fifoq/internal/memguard"
	"github.com/fifoq/fifoq/internal/node"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
)

// backupOptions are the flags of "fifoq backup".
type backupOptions struct {
	endpoint, region string
	timeout          time.Duration
	caCert           string
}

// backupFlagSet defines the flags of "fifoq backup" on o.
func backupFlagSet(o *backupOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", envOr("FIFOQ_ENDPOINT", "http://127.0.0.1:9324"), "SQS endpoint URL of the server, or of any cluster member (env FIFOQ_ENDPOINT)")
	fs.StringVar(&o.region, "region", envOr("AWS_REGION", "us-east-1"), "region of the request signature")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "how long the backup may take")
	defineCACert(fs, &o.caCert)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fifoq backup [flags] FILE

Takes a backup of a running server's whole state (every queue, every
message in its state, deduplication records, move tasks) while it goes on
serving, and writes it to FILE ("-": standard output), one versioned,
checksummed file; fifoq restore makes a data dir of it. On a cluster
member, it is that member's state; in a cluster with shards, every
shard's (each from a replica that holds it) and the first group's, each
group as of one moment. The request is signed (SigV4) with
FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY): an admin key of the server's own account.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// backupCmd runs "fifoq backup".
func backupCmd(args []string, stdout, stderr io.Writer) int {
	var o backupOptions
	fs := backupFlagSet(&o, stderr)
	if exit, stop := parseArgs(fs, args, true, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	began := time.Now()
	hdr, n, err := takeBackup(o, fs.Arg(0), stdout)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq backup: %v\n", explainTLS(err))
		return 1
	}
	if len(hdr.Groups) > 0 {
		fmt.Fprintf(stderr, "fifoq backup: %d messages in %d groups (the first as of log entry %d) through node %s, %s in %v\n",
			hdr.Messages, len(hdr.Groups), hdr.Index, hdr.Node, memguard.HumanSize(n), time.Since(began).Round(time.Millisecond))
		return 0
	}
	fmt.Fprintf(stderr, "fifoq backup: %d messages as of log entry %d on node %s, %s in %v\n",
		hdr.Messages, hdr.Index, hdr.Node, memguard.HumanSize(n), time.Since(began).Round(time.Millisecond))
	return 0
}

// takeBackup asks the server for a backup and writes it to path ("-":
// stdout), checking it as it goes. A file is written beside its final
// name, synced and renamed once whole, so that FILE is a whole backup or
// absent.
func takeBackup(o backupOptions, path string, stdout io.Writer) (backup.Header, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.endpoint, "/")+server.BackupPath, nil)
	if err != nil {
		return backup.Header{}, 0, err
	}
	if cred := cliCredential(); cred.AccessKeyID != "" {
		if err := auth.SignRequest(req, nil, cred, o.region, time.Now()); err != nil {
			return backup.Header{}, 0, err
		}
	}
	client, err := httpClient(o.caCert)
	if err != nil {
		return backup.Header{}, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return backup.Header{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return backup.Header{}, 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(answer)))
	}
	// Checked as it streams: a backup cut short fails here too.
	out, commit, err := openOutput(path, stdout)
	if err != nil {
		return backup.Header{}, 0, err
	}
	hdr, n, err := copyChecked(out, resp.Body)
	return hdr, n, commit(err)
}

// copyChecked copies a backup from r to w, checking its format and
// checksums as it goes. The header returned is the backup's, with the
// messages of all its parts (a backup of a cluster with shards has one
// per group) and the first group's log entry.
func copyChecked(w io.Writer, r io.Reader) (backup.Header, int64, error) {
	cw := &countingWriter{w: w}
	f, err := backup.Open(io.TeeReader(r, cw))
	if err != nil {
		return backup.Header{}, cw.n, err
	}
	total := f.Header
	total.Messages = 0
	for {
		hdr, snap, err := f.Next()
		if errors.Is(err, io.EOF) {
			return total, cw.n, nil
		}
		if err != nil {
			return total, cw.n, err
		}
		if _, err := io.Copy(io.Discard, snap); err != nil {
			return total, cw.n, err
		}
		total.Messages += hdr.Messages
		total.Index, total.Term = hdr.Index, hdr.Term
	}
}

// countingWriter counts what it passes on.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// restoreOptions are the flags of "fifoq restore".
type restoreOptions struct {
	dataDir, nodeID, region string
	timeout                 time.Duration
}

// restoreFlagSet defines the flags of "fifoq restore" on o.
func restoreFlagSet(o *restoreOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dataDir, "data-dir", "", "the data directory to make: it must not exist, or be empty")
	fs.StringVar(&o.nodeID, "node-id", defaultNodeID, "the node id the server will run as (fifoq serve --node-id)")
	fs.StringVar(&o.region, "region", "", "the region of the data dir: the backup's if not given; another one is refused (fifoq serve --region)")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "how long the restore may take")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fifoq restore --data-dir DIR [flags] FILE

Makes a new data directory from a backup taken by fifoq backup (FILE "-":
standard input). fifoq serve --data-dir DIR then answers as the server did
when the backup was taken. The data dir is a new cluster of one node;
other nodes join it (fifoq serve --join). The backup is checked whole (its
format and checksum) before anything is kept: a damaged one leaves no data
dir behind.

A backup belongs to the region of the server it was taken of, and so does
the data dir made of it: serve it with that --region. A data dir cannot
change region.

A backup of a cluster with shards restores every shard onto this one
node: serve the data dir as a cluster member (--node-id, --raft-addr, no
--peers); nodes that join it then get their share of the shards.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// restoreCmd runs "fifoq restore".
func restoreCmd(args []string, stdout, stderr io.Writer) int {
	var o restoreOptions
	fs := restoreFlagSet(&o, stderr)
	if exit, stop := parseArgs(fs, args, true, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() != 1 || o.dataDir == "" {
		fs.Usage()
		return 2
	}
	began := time.Now()
	hdr, err := restoreBackup(o, fs.Arg(0), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fifoq restore: %v\n", err)
		return 1
	}
	if len(hdr.Groups) > 0 {
		fmt.Fprintf(stdout, "restored %d messages in %d groups (taken %s) into %s in %v; it holds shards: serve it as a cluster member, with --node-id %s --raft-addr HOST:PORT --region %s\n",
			hdr.Messages, len(hdr.Groups), hdr.Created.Format(time.RFC3339), o.dataDir, time.Since(began).Round(time.Millisecond), o.nodeID, hdr.Region)
		return 0
	}
	fmt.Fprintf(stdout, "restored %d messages (node %s, log entry %d, taken %s) into %s in %v; serve it with --region %s\n",
		hdr.Messages, hdr.Node, hdr.Index, hdr.Created.Format(time.RFC3339), o.dataDir, time.Since(began).Round(time.Millisecond), hdr.Region)
	return 0
}

// restoreBackup makes o.dataDir from the backup at path.
func restoreBackup(o restoreOptions, path string, stderr io.Writer) (backup.Header, error) {
	if err := replog.CheckNodeID(o.nodeID); err != nil {
		return backup.Header{}, err
	}
	entries, err := os.ReadDir(o.dataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return backup.Header{}, err
	case len(entries) > 0:
		return backup.Header{}, fmt.Errorf("%s is not empty: a backup is restored into a new data dir (stop the server and move the old one away first)", o.dataDir)
	}
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return backup.Header{}, err
		}
		defer f.Close()
		in = f
	}
	made, err := missingAncestor(o.dataDir)
	if err != nil {
		return backup.Header{}, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hdr, err := node.Restore(o.dataDir, o.nodeID, o.region, in, o.timeout, logger)
	if err != nil {
		// Nothing half-made is left for fifoq serve to start from: what
		// the restore made goes, and the operator's empty dir is emptied.
		if made != "" {
			os.RemoveAll(made)
			return hdr, err
		}
		entries, _ := os.ReadDir(o.dataDir)
		for _, e := range entries {
			os.RemoveAll(filepath.Join(o.dataDir, e.Name()))
		}
		return hdr, err
	}
	return hdr, nil
}

// missingAncestor returns the outermost directory of the path dir that
// does not exist yet (dir itself, or a parent of it), which a restore
// makes and must remove if it fails; "" if dir exists.
func missingAncestor(dir string) (string, error) {
	missing := ""
	for dir = filepath.Clean(dir); ; dir = filepath.Dir(dir) {
		_, err := os.Stat(dir)
		switch {
		case err == nil:
			return missing, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
		missing = dir
		if filepath.Dir(dir) == dir {
			return missing, nil
		}
	}
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which it leaves in fs.Args().
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, rest...))
}
