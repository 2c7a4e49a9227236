package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fifoq/fifoq/internal/auth"
	"github.com/fifoq/fifoq/internal/replog"
	"github.com/fifoq/fifoq/internal/server"
)

// clusterCmd runs "fifoq cluster status|leader|shards|add|remove" against any
// member's HTTP endpoint.
func clusterCmd(args []string, stdout, stderr io.Writer) int {
	var o clusterCmdOptions
	fs := clusterFlagSet(&o, stderr)
	// Flags may come before or after the subcommand, the ID and address.
	if exit, stop := parseArgs(fs, args, true, stdout, stderr); stop {
		return exit
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if isHelpWord(fs.Arg(0)) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	return clusterRun(fs.Arg(0), fs.Args()[1:], fs, o, stdout, stderr)
}

// clusterCmdOptions are the flags of "fifoq cluster".
type clusterCmdOptions struct {
	endpoint, region, caCert string
	asJSON                   bool
	// wait bounds how long remove asks again while the member's
	// replicas move away.
	wait time.Duration
}

// clusterSubcommands are the words "fifoq cluster" takes first.
var clusterSubcommands = []string{"status", "leader", "shards", "add", "remove", "move"}

// clusterFlagSet defines the flags of "fifoq cluster" on o: the one
// definition that parsing, shell completion and the man page all read.
func clusterFlagSet(o *clusterCmdOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fifoq cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", envOr("FIFOQ_ENDPOINT", "http://127.0.0.1:9324"), "SQS endpoint URL of any member of the cluster (env FIFOQ_ENDPOINT)")
	fs.StringVar(&o.region, "region", envOr("AWS_REGION", "us-east-1"), "region of the request signature")
	fs.BoolVar(&o.asJSON, "json", false, "print the server's answer as JSON, as it is")
	fs.DurationVar(&o.wait, "wait", 10*time.Minute, "how long remove waits for the member's shard replicas to move to the other members before it gives up (the move goes on)")
	defineCACert(fs, &o.caCert)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  fifoq cluster status [flags]            members, leader, each node's applied index, lag and last contact; each shard's leader and replicas' lag
  fifoq cluster leader [flags]            the leader's node id and SQS endpoint
  fifoq cluster shards [flags]            each shard's leader, members, progress and queues, as the node asked sees them
  fifoq cluster add ID HOST:PORT [flags]  add a member (HOST:PORT is its --raft-addr); it votes once caught up
  fifoq cluster remove ID [flags]         remove a member, once its shard replicas have moved to the others (up to --wait)
  fifoq cluster move QUEUE_URL SHARD [flags]
                                          move a queue to another shard (its clients see retryable 503s meanwhile)

add, remove and move are signed (SigV4) with FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY
(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): an admin key of the server's own
account (the server's FIFOQ_ACCESS_KEY_ID, or a credentials file line ending in admin).
add and remove print what was done and the members after it ("removed n3; members: n1 n2"),
move the shards it moved between ("moved QUEUE_URL from shard 2 to shard 3").

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// clusterRun runs one subcommand of "fifoq cluster" with its arguments.
func clusterRun(sub string, rest []string, fs *flag.FlagSet, o clusterCmdOptions, stdout, stderr io.Writer) int {
	base := strings.TrimSuffix(o.endpoint, "/")
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fifoq cluster %s: %v\n", sub, explainTLS(err))
		return 1
	}
	if !slices.Contains(clusterSubcommands, sub) {
		fmt.Fprintf(stderr, "fifoq cluster: unknown command %q\n", sub)
		fs.Usage()
		return 2
	}
	if want := map[string]int{"add": 2, "remove": 1, "move": 2}[sub]; len(rest) != want {
		fs.Usage()
		return 2
	}
	client, err := httpClient(o.caCert)
	if err != nil {
		return fail(err)
	}
	switch sub {
	case "status":
		var st server.ClusterStatus
		raw, err := getJSON(ctx, client, base+"/cluster/status", &st)
		if err != nil {
			return fail(err)
		}
		if o.asJSON {
			stdout.Write(raw)
			return 0
		}
		printStatus(stdout, st)
		return 0
	case "shards":
		var st server.ShardsStatus
		raw, err := getJSON(ctx, client, base+"/cluster/shards", &st)
		if err != nil {
			return fail(err)
		}
		if o.asJSON {
			stdout.Write(raw)
			return 0
		}
		printShards(stdout, st)
		return 0
	case "leader":
		var li server.LeaderInfo
		raw, err := getJSON(ctx, client, base+"/cluster/leader", &li)
		if err != nil {
			return fail(err)
		}
		if o.asJSON {
			stdout.Write(raw)
			return 0
		}
		fmt.Fprintf(stdout, "%s\t%s\n", li.LeaderID, li.SQSEndpoint)
		return 0
	case "add":
		body, _ := json.Marshal(map[string]string{"id": rest[0], "raft_addr": rest[1]})
		status, answer, err := adminRequest(ctx, client, http.MethodPost, base+"/cluster/members", body, cliCredential(), o.region)
		return membershipAnswer(stdout, stderr, sub, rest[0], o.asJSON, status, answer, err)
	case "move":
		shard, err := strconv.ParseUint(rest[1], 10, 32)
		if err != nil || shard == 0 {
			fmt.Fprintf(stderr, "fifoq cluster move: SHARD is a shard's number, from 1 (fifoq cluster shards lists them), not %q\n", rest[1])
			return 2
		}
		body, _ := json.Marshal(map[string]any{"queue_url": rest[0], "shard": shard})
		status, answer, err := adminRequest(ctx, client, http.MethodPost, base+"/cluster/moves", body, cliCredential(), o.region)
		return moveAnswer(stdout, stderr, o.asJSON, status, answer, err)
	default: // remove
		return removeMember(ctx, client, base, rest[0], o, stdout, stderr)
	}
}

// removeMember removes member id. In a cluster with shards the server
// first moves the member's replicas to the other members, answering 202
// (server.Draining) until they have: it is asked again once a second,
// for up to --wait, saying which shards are left as that changes. A 503
// once the move began (a leader changing, say) is asked again too.
func removeMember(ctx context.Context, client *http.Client, base, id string, o clusterCmdOptions, stdout, stderr io.Writer) int {
	deadline := time.Now().Add(o.wait)
	var draining bool
	var said string
	for {
		status, answer, err := adminRequest(ctx, client, http.MethodDelete, base+"/cluster/members/"+id, nil, cliCredential(), o.region)
		again := err == nil && (status == http.StatusAccepted || (draining && status == http.StatusServiceUnavailable))
		if !again {
			return membershipAnswer(stdout, stderr, "remove", id, o.asJSON, status, answer, err)
		}
		if status == http.StatusAccepted {
			draining = true
			var d server.Draining
			if json.Unmarshal(answer, &d) == nil {
				shards := make([]string, len(d.Shards))
				for i, sh := range d.Shards {
					shards[i] = strconv.FormatUint(uint64(sh), 10)
				}
				if line := fmt.Sprintf("%s is leaving: its replicas move to the other members; shards still to move: %s", id, strings.Join(shards, " ")); line != said {
					fmt.Fprintln(stderr, line)
					said = line
				}
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "fifoq cluster remove: %s is not removed after %v: its replicas have not all moved yet (they go on moving; run the command again to remove it once they have). The last answer: %d: %s\n", id, o.wait, status, strings.TrimSpace(string(answer)))
			return 1
		}
		time.Sleep(time.Second)
	}
}

// moveAnswer prints the server's answer to fifoq cluster move and returns
// the exit code.
func moveAnswer(stdout, stderr io.Writer, asJSON bool, status int, answer []byte, err error) int {
	if err != nil {
		fmt.Fprintf(stderr, "fifoq cluster move: %v\n", explainTLS(err))
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "fifoq cluster move: %d: %s\n", status, strings.TrimSpace(string(answer)))
		return 1
	}
	if asJSON {
		stdout.Write(answer)
		return 0
	}
	var m server.MoveResult
	if err := json.Unmarshal(answer, &m); err != nil {
		fmt.Fprintf(stdout, "moved; the server's answer: %s\n", strings.TrimSpace(string(answer)))
		return 0
	}
	if m.From == m.To {
		fmt.Fprintf(stdout, "%s is in shard %d already\n", m.QueueURL, m.To)
		return 0
	}
	fmt.Fprintf(stdout, "moved %s from shard %d to shard %d\n", m.QueueURL, m.From, m.To)
	return 0
}

// membershipAnswer prints the server's answer to sub (add or remove) of
// the member id and returns the exit code. Without asJSON it prints a
// line for people, "removed n3; members: n1 n2", as status and leader
// print theirs.
func membershipAnswer(stdout, stderr io.Writer, sub, id string, asJSON bool, status int, answer []byte, err error) int {
	if err != nil {
		fmt.Fprintf(stderr, "fifoq cluster %s: %v\n", sub, explainTLS(err))
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "fifoq cluster %s: %d: %s\n", sub, status, strings.TrimSpace(string(answer)))
		return 1
	}
	if asJSON {
		stdout.Write(answer)
		return 0
	}
	var a struct {
		Members []replog.Member `json:"members"`
	}
	done := map[string]string{"add": "added", "remove": "removed"}[sub]
	if err := json.Unmarshal(answer, &a); err != nil {
		// Done all the same: say so, and show what the server said.
		fmt.Fprintf(stdout, "%s %s; the server's answer: %s\n", done, id, strings.TrimSpace(string(answer)))
		return 0
	}
	members := make([]string, len(a.Members))
	for i, m := range a.Members {
		members[i] = m.ID
		if !m.Voter {
			members[i] += " (not voting yet)"
		}
	}
	fmt.Fprintf(stdout, "%s %s; members: %s\n", done, id, strings.Join(members, " "))
	return 0
}

// getJSON gets url with client and decodes its answer into v; it returns
// the answer as it came, for --json.
func getJSON(ctx context.Context, client *http.Client, url string, v any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
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
	clusterID := ""
	for _, m := range st.Members {
		if m.ID == st.Node && m.Status != nil {
			clusterID = m.Status.ClusterID
		}
	}
	fmt.Fprintf(w, "leader: %s (asked %s), cluster id: %s\n", orNone(st.LeaderID), st.Node, orNone(clusterID))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT ADDR\tVOTER\tSTATE\tTERM\tAPPLIED\tCOMMIT\tLAG\tLAST CONTACT\tFORMAT\tINCARNATION\tSQS ENDPOINT")
	for _, m := range st.Members {
		if m.Status == nil {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t\t\t\t\t\t\t%s\t\n", m.ID, m.Addr, m.Voter, "unreachable ("+m.Error+")", shortIncarnation(m.Incarnation))
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
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\t%d\t%d\t%d\t%s\t%d/%d\t%s\t%s\n", m.ID, m.Addr, m.Voter, m.Status.State, m.Status.Term,
			m.Status.AppliedIndex, m.Status.CommitIndex, m.Lag, contact, m.Status.EntryFormat, m.Status.ReadsFormat,
			shortIncarnation(m.Incarnation), m.Status.SQSEndpoint)
	}
	tw.Flush()
	if len(st.Shards) == 0 {
		return
	}
	// The shards beside the first group: where each is led, and how far
	// each replica is behind its group's commit index (a replica of a
	// member that did not answer is missing).
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tLEADER\tREPLICAS (LAG)")
	for _, sh := range st.Shards {
		var reps []string
		for _, r := range sh.Replicas {
			reps = append(reps, fmt.Sprintf("%s (%d)", r.ID, r.Lag))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", sh.Shard, orNone(sh.LeaderID), strings.Join(reps, " "))
	}
	tw.Flush()
}

// printShards prints the shards as a table, one line per shard, its
// queues last.
func printShards(w io.Writer, st server.ShardsStatus) {
	fmt.Fprintf(w, "asked %s\n", st.Node)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tLEADER\tSTATE HERE\tTERM\tAPPLIED\tCOMMIT\tVOTERS\tQUEUES")
	for _, sh := range st.Shards {
		if !sh.Held && sh.Via == "" {
			fmt.Fprintf(tw, "%d\t-\tno replica here\t\t\t\t%s\t-\n", sh.Shard, orNone(strings.Join(sh.Wanted, ",")))
			continue
		}
		state := sh.State
		if !sh.Held {
			// As the replica on another node sees it.
			state = "(on " + sh.Via + ") " + state
		}
		if sh.Idle {
			state += " (idle)"
		}
		var voters []string
		for _, m := range sh.Members {
			if m.Voter {
				voters = append(voters, m.ID)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\t%d %s\n", sh.Shard, orNone(sh.LeaderID), state, sh.Term, sh.AppliedIndex, sh.CommitIndex,
			orNone(strings.Join(voters, ",")), len(sh.Queues), strings.Join(sh.Queues, " "))
	}
	tw.Flush()
}

// shortIncarnation is the first 12 hex digits of a member's recorded
// incarnation, enough to tell it from the one in a data dir's
// incarnation file; "-" until the cluster has recorded it. --json has it
// whole.
func shortIncarnation(inc string) string {
	if inc == "" {
		return "-"
	}
	return inc[:min(12, len(inc))]
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// cliCredential is the key the client commands (cluster, backup, export,
// import) sign with, from the environment: FIFOQ_ACCESS_KEY_ID and
// FIFOQ_SECRET_ACCESS_KEY, else AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY.
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
