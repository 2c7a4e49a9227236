package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/server"
)

// clusterCmd runs "fifoq cluster status|leader|add|remove" against any
// member's HTTP endpoint.
func clusterCmd(args []string, stdout, stderr io.Writer) int {
	var o clusterCmdOptions
	fs := clusterFlagSet(&o, stderr)
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	sub := args[0]
	// Flags may come before or after the ID and address.
	if err := parseInterspersed(fs, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	return clusterRun(sub, fs.Args(), fs, o.endpoint, o.region, o.asJSON, stdout, stderr)
}

// clusterCmdOptions are the flags of "fifoq cluster".
type clusterCmdOptions struct {
	endpoint, region string
	asJSON           bool
}

// clusterSubcommands are the words "fifoq cluster" takes first.
var clusterSubcommands = []string{"status", "leader", "add", "remove"}

// clusterFlagSet defines the flags of "fifoq cluster" on o: the one
// definition that parsing, shell completion and the man page all read.
func clusterFlagSet(o *clusterCmdOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", envOr("FIFOQ_ENDPOINT", "http://127.0.0.1:9324"), "SQS endpoint URL of any member of the cluster (env FIFOQ_ENDPOINT)")
	fs.StringVar(&o.region, "region", envOr("AWS_REGION", "us-east-1"), "region of the request signature")
	fs.BoolVar(&o.asJSON, "json", false, "print the answer as JSON (status, leader)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  fifoq cluster status [flags]            members, leader, each node's applied index, lag and last contact
  fifoq cluster leader [flags]            the leader's node id and SQS endpoint
  fifoq cluster add ID HOST:PORT [flags]  add a member (HOST:PORT is its --raft-addr); it votes once caught up
  fifoq cluster remove ID [flags]         remove a member

add and remove are signed (SigV4) with FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY
(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): an admin key of the server's own
account (the server's FIFOQ_ACCESS_KEY_ID, or a credentials file line ending in admin).

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// clusterRun runs one subcommand of "fifoq cluster" with its arguments.
func clusterRun(sub string, rest []string, fs *flag.FlagSet, endpoint, region string, asJSON bool, stdout, stderr io.Writer) int {
	base := strings.TrimSuffix(endpoint, "/")
	ctx := context.Background()
	cred := cliCredential()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fifoq cluster %s: %v\n", sub, err)
		return 1
	}
	switch sub {
	case "status":
		if len(rest) != 0 {
			fs.Usage()
			return 2
		}
		var st server.ClusterStatus
		raw, err := getJSON(ctx, base+"/cluster/status", &st)
		if err != nil {
			return fail(err)
		}
		if asJSON {
			stdout.Write(raw)
			return 0
		}
		printStatus(stdout, st)
		return 0
	case "leader":
		if len(rest) != 0 {
			fs.Usage()
			return 2
		}
		var li server.LeaderInfo
		raw, err := getJSON(ctx, base+"/cluster/leader", &li)
		if err != nil {
			return fail(err)
		}
		if asJSON {
			stdout.Write(raw)
			return 0
		}
		fmt.Fprintf(stdout, "%s\t%s\n", li.LeaderID, li.SQSEndpoint)
		return 0
	case "add":
		if len(rest) != 2 {
			fs.Usage()
			return 2
		}
		body, _ := json.Marshal(map[string]string{"id": rest[0], "raft_addr": rest[1]})
		return membershipAnswer(stdout, stderr, sub)(adminRequest(ctx, http.MethodPost, base+"/cluster/members", body, cred, region))
	case "remove":
		if len(rest) != 1 {
			fs.Usage()
			return 2
		}
		return membershipAnswer(stdout, stderr, sub)(adminRequest(ctx, http.MethodDelete, base+"/cluster/members/"+rest[0], nil, cred, region))
	default:
		fmt.Fprintf(stderr, "fifoq cluster: unknown command %q\n", sub)
		fs.Usage()
		return 2
	}
}

// membershipAnswer prints the answer of add or remove and returns the
// exit code.
func membershipAnswer(stdout, stderr io.Writer, sub string) func(int, []byte, error) int {
	return func(status int, answer []byte, err error) int {
		if err != nil {
			fmt.Fprintf(stderr, "fifoq cluster %s: %v\n", sub, err)
			return 1
		}
		if status != http.StatusOK {
			fmt.Fprintf(stderr, "fifoq cluster %s: %d: %s\n", sub, status, strings.TrimSpace(string(answer)))
			return 1
		}
		stdout.Write(answer)
		return 0
	}
}

func getJSON(ctx context.Context, url string, v any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	return raw, json.Unmarshal(raw, v)
}

// printStatus prints a cluster status as a table.
func printStatus(w io.Writer, st server.ClusterStatus) {
	fmt.Fprintf(w, "leader: %s (asked %s)\n", orNone(st.LeaderID), st.Node)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT ADDR\tVOTER\tSTATE\tTERM\tAPPLIED\tCOMMIT\tLAG\tLAST CONTACT\tFORMAT\tSQS ENDPOINT")
	for _, m := range st.Members {
		if m.Status == nil {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t\t\t\t\t\t\t\n", m.ID, m.Addr, m.Voter, "unreachable ("+m.Error+")")
			continue
		}
		contact := "-"
		if m.Leader {
			contact = "(leader)"
		} else if !m.Status.LastContact.IsZero() {
			contact = time.Since(m.Status.LastContact).Round(time.Millisecond).String() + " ago"
		}
		// FORMAT: the log entry format the node writes / the newest it
		// reads; they differ during a rolling upgrade.
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\t%d\t%d\t%d\t%s\t%d/%d\t%s\n", m.ID, m.Addr, m.Voter, m.Status.State, m.Status.Term,
			m.Status.AppliedIndex, m.Status.CommitIndex, m.Lag, contact, m.Status.EntryFormat, m.Status.ReadsFormat, m.Status.SQSEndpoint)
	}
	tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// cliCredential is the key fifoq cluster signs with, from the environment.
func cliCredential() auth.Credential {
	id, secret := os.Getenv("FIFOQ_ACCESS_KEY_ID"), os.Getenv("FIFOQ_SECRET_ACCESS_KEY")
	if id == "" {
		id, secret = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	return auth.Credential{AccessKeyID: id, SecretAccessKey: secret}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
