package elasticmq

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestConvertGolden")

// TestConvertGolden converts each testdata/*.conf, ElasticMQ files as
// teams write them, and compares the YAML and the warnings with
// testdata/NAME.golden; go test -update rewrites those. Every output must
// also load as fifoq's config file.
func TestConvertGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.conf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Convert(file, src)
			if err != nil {
				t.Fatal(err)
			}
			got := string(res.YAML) + "---- warnings\n" + strings.Join(res.Warnings, "\n") + "\n"
			golden := strings.TrimSuffix(file, ".conf") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("converting %s gave:\n%s\nwant (%s):\n%s", file, got, golden, want)
			}
			if _, err := config.Parse("out.yaml", res.YAML, noEnv); err != nil {
				t.Errorf("the output does not load: %v", err)
			}
		})
	}
}

func noEnv(string) (string, bool) { return "", false }

// TestConvertReadmeExample checks the queues of ElasticMQ's README
// example field by field, beyond the golden text.
func TestConvertReadmeExample(t *testing.T) {
	src, err := os.ReadFile("testdata/readme.conf")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert("readme.conf", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %q, want none", res.Warnings)
	}
	if len(res.Queues) != 2 {
		t.Fatalf("%d queues, want 2", len(res.Queues))
	}
	q := res.Queues[0]
	want := map[string]string{"VisibilityTimeout": "10", "DelaySeconds": "5", "ReceiveMessageWaitTimeSeconds": "0"}
	if q.Name != "invoices" || len(q.Attributes) != len(want) {
		t.Errorf("queue %s with attributes %v, want invoices with %v", q.Name, q.Attributes, want)
	}
	for k, v := range want {
		if q.Attributes[k] != v {
			t.Errorf("%s = %q, want %q", k, q.Attributes[k], v)
		}
	}
	if d := q.DeadLetter; d == nil || d.Queue != "invoices-dead-letters" || d.MaxReceiveCount != 3 {
		t.Errorf("dead letter %+v, want invoices-dead-letters after 3", d)
	}
	if res.Queues[1].Name != "invoices-dead-letters" || len(res.Queues[1].Attributes) != 0 {
		t.Errorf("second queue %+v, want invoices-dead-letters with no attributes", res.Queues[1])
	}
}

// TestConvertRefuses checks that what cannot be converted is refused
// with the file, the line and what to do.
func TestConvertRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
		want      string
	}{
		{"another include", "include \"queues.conf\"\nqueues {}\n", 1, "included files are not read"},
		{"include file()", "include classpath(\"application.conf\")\ninclude file(\"/etc/q.conf\")\n", 2, "put the queues they declare into this file"},
		{"no queues", "rest-sqs { bind-port = 9324 }\n", 0, "no queues { ... } block"},
		{"queues not an object", "queues = 3\n", 1, "queues must be an object"},
		{"queue not an object", "queues {\n  a = 5\n}\n", 2, "queue a: want an object"},
		{"unquoted fifo name", "queues {\n  orders.fifo { fifo = true }\n}\n", 2, `quote the queue's name, "orders.fifo"`},
		{"dlq of the other type", "queues {\n  q {\n    fifo = true\n    deadLettersQueue { name = dlq, maxReceiveCount = 3 }\n  }\n  dlq {}\n}\n", 2, "must be of the same type"},
		{"dlq not declared", "queues {\n  q {\n    deadLettersQueue { name = gone, maxReceiveCount = 3 }\n  }\n}\n", 3, "dead-letter queue gone is not declared"},
		{"dlq named without .fifo", "queues {\n  d { fifo = true }\n  q {\n    fifo = true\n    deadLettersQueue { name = d, maxReceiveCount = 3 }\n  }\n}\n", 5, `write name = "d.fifo"`},
		{"dlq without count", "queues {\n  d {}\n  q { deadLettersQueue { name = d } }\n}\n", 3, "needs both name and maxReceiveCount"},
		{"dlq count zero", "queues {\n  d {}\n  q { deadLettersQueue { name = d, maxReceiveCount = 0 } }\n}\n", 3, "out of range (1 to 1000)"},
		{"dlq count not a number", "queues {\n  d {}\n  q { deadLettersQueue { name = d, maxReceiveCount = many } }\n}\n", 3, "must be a whole number"},
		{"dlq cycle", "queues {\n  a { deadLettersQueue { name = b, maxReceiveCount = 1 } }\n  b { deadLettersQueue { name = a, maxReceiveCount = 1 } }\n}\n", 0, "cycle"},
		{"delay too long", "queues {\n  q {\n    delay = 16 minutes\n  }\n}\n", 3, "960 seconds, out of the range of DelaySeconds (0 to 900 seconds)"},
		{"wait too long", "queues {\n  q { receiveMessageWait = 21 seconds }\n}\n", 2, "out of the range of ReceiveMessageWaitTimeSeconds (0 to 20 seconds)"},
		{"negative timeout", "queues {\n  q { defaultVisibilityTimeout = -1 s }\n}\n", 2, "out of the range of VisibilityTimeout (0 to 43200 seconds)"},
		{"unknown unit", "queues {\n  q { delay = 5 fortnights }\n}\n", 2, `unknown unit "fortnights"`},
		{"not a duration", "queues {\n  q { delay = soon }\n}\n", 2, "is not a duration"},
		{"substitution", "queues {\n  q { delay = ${DELAY} }\n}\n", 2, "substitutions are not supported"},
		{"fifo not a boolean", "queues {\n  q { fifo = maybe }\n}\n", 2, "fifo must be true or false"},
		{"tags not an object", "queues {\n  q { tags = [a, b] }\n}\n", 2, "tags must be an object"},
		{"twice after the suffix", "queues {\n  a { fifo = true }\n  \"a.fifo\" { fifo = true }\n}\n", 3, "declared twice"},
		{"bad name", "queues {\n  \"bad name\" {}\n}\n", 2, "queue bad name"},
		{"unclosed object", "queues {\n  q {\n    delay = 1 s\n", 4, "a '}' is missing"},
		{"stray brace", "queues {}\n}\n", 2, "'}' without a matching '{'"},
		{"unclosed string", "queues {\n  q { copyTo = \"audit }\n}\n", 2, "runs to the end of the line"},
		{"append", "queues {\n  q.tags += x\n}\n", 2, "appending to a value is not supported"},
		{"triple quotes", "queues {\n  q { copyTo = \"\"\"a\"\"\" }\n}\n", 2, "triple-quoted strings are not supported"},
		{"concatenation", "queues {\n  q { copyTo = \"a\" b }\n}\n", 2, "concatenated values are not supported"},
		{"forbidden character", "queues {\n  q { copyTo = a*b }\n}\n", 2, "quote the value"},
		{"two fields on a line", "queues {\n  q { delay = 1 s } r {}\n}\n", 2, "separate fields with commas"},
		{"missing separator", "queues {\n  q delay\n}\n", 2, "expected '=', ':' or '{'"},
		{"too deep", strings.Repeat("a {", 200), 1, "nested deeper than"},
		{"not UTF-8", "queues {\n  q { copyTo = \x84 }\n}\n", 2, "byte 0x84 is not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Convert("elasticmq.conf", []byte(tc.src))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Convert gave %v (%v), want an *Error", err, res)
			}
			if e.File != "elasticmq.conf" || e.Line != tc.line || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("error %q at line %d, want line %d and %q", err, e.Line, tc.line, tc.want)
			}
		})
	}
}

// TestConvertWarns checks what is converted with a loss, or left out, is
// said on a line of its own, and in the output where it concerns a queue.
func TestConvertWarns(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		warnings  []string
		inYAML    string
	}{
		{"copyTo", "queues {\n  audit {}\n  q { copyTo = audit }\n}\n",
			[]string{"elasticmq.conf:3: queue q: copyTo = audit, which copies every message sent to this queue to audit as well, is not converted"},
			"# ElasticMQ's copyTo = audit, which"},
		{"moveTo", "queues {\n  other {}\n  q {\n    moveTo = other\n  }\n}\n",
			[]string{"elasticmq.conf:4: queue q: moveTo = other, which sends every message sent to this queue to other instead, is not converted"},
			"# ElasticMQ's moveTo = other, which"},
		{"empty copyTo", "queues {\n  q { copyTo = \"\", moveTo = \"\" }\n}\n", nil, ""},
		{"milliseconds", "queues {\n  q { delay = 5 }\n}\n",
			[]string{"elasticmq.conf:2: queue q: delay = 5 is not a whole number of seconds: DelaySeconds 0, as ElasticMQ reads it; a number without a unit is milliseconds in HOCON: write 5 seconds if seconds were meant"},
			"DelaySeconds: 0"},
		{"truncated", "queues {\n  q { defaultVisibilityTimeout = 2.5 seconds }\n}\n",
			[]string{"elasticmq.conf:2: queue q: defaultVisibilityTimeout = 2.5 seconds is not a whole number of seconds: VisibilityTimeout 2, as ElasticMQ reads it"},
			"VisibilityTimeout: 2"},
		{"unknown setting", "queues {\n  q {\n    maxReceiveCount = 3\n  }\n}\n",
			[]string{"elasticmq.conf:3: queue q: maxReceiveCount is not an ElasticMQ queue setting this converter knows: left out"}, ""},
		{"content dedup on standard", "queues {\n  q { contentBasedDeduplication = true }\n}\n",
			[]string{"elasticmq.conf:2: queue q: contentBasedDeduplication on a standard queue means nothing (SQS refuses it): left out"}, ""},
		{".fifo without fifo", "queues {\n  \"q.fifo\" {}\n}\n",
			[]string{"elasticmq.conf:2: queue q.fifo: a name ending in .fifo without fifo = true; a queue of that name can only be a FIFO queue in SQS and fifoq, so it is converted as one"},
			"FifoQueue: true"},
		{"account", "aws { accountId = 111122223333 }\nqueues {}\n",
			[]string{`elasticmq.conf:1: aws.accountId is 111122223333: give fifoq the same account (account: "111122223333" in its config file, or --account) so that queue URLs and ARNs keep naming it`},
			"queues: []"},
		{"fifo suffix", "queues {\n  jobs { fifo = true }\n}\n", nil,
			"# ElasticMQ's queue jobs, fifo = true: named jobs.fifo, as ElasticMQ names it\n  - name: jobs.fifo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Convert("elasticmq.conf", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %q", res.Warnings, tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.HasPrefix(res.Warnings[i], w) {
					t.Errorf("warning %q, want it to begin %q", res.Warnings[i], w)
				}
			}
			if !strings.Contains(string(res.YAML), tc.inYAML) {
				t.Errorf("the output lacks %q:\n%s", tc.inYAML, res.YAML)
			}
		})
	}
}

// TestDuration checks durations as Typesafe Config reads them into
// whole seconds.
func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		v     *value
		secs  int64
		exact bool
	}{
		{&value{kind: kindString, text: "10 seconds"}, 10, true},
		{&value{kind: kindString, text: "0 seconds"}, 0, true},
		{&value{kind: kindString, text: "20s"}, 20, true},
		{&value{kind: kindString, text: "1 second"}, 1, true},
		{&value{kind: kindString, text: "2 minutes"}, 120, true},
		{&value{kind: kindString, text: "1h"}, 3600, true},
		{&value{kind: kindString, text: "1 d"}, 86400, true},
		{&value{kind: kindString, text: "1500ms"}, 1, false},
		{&value{kind: kindString, text: "2000 millis"}, 2, true},
		{&value{kind: kindString, text: "3000"}, 3, true}, // a quoted number: milliseconds too
		{&value{kind: kindString, text: "0.5 m"}, 30, true},
		{&value{kind: kindNumber, text: "30000"}, 30, true},
		{&value{kind: kindNumber, text: "999"}, 0, false},
		{&value{kind: kindString, text: "5000000000 ns"}, 5, true},
	} {
		secs, exact, err := duration(tc.v)
		if err != nil || secs != tc.secs || exact != tc.exact {
			t.Errorf("duration(%q) = %d, %v, %v; want %d, %v", tc.v.text, secs, exact, err, tc.secs, tc.exact)
		}
	}
}

// TestHOCONMerges checks HOCON's rules for a key given twice: objects
// merge, anything else is replaced by the later value.
func TestHOCONMerges(t *testing.T) {
	src := "queues { q { delay = 1 s } }\nqueues { q { receiveMessageWait = 2 s }, r {} }\nqueues.q.delay = 3 s\n"
	res, err := Convert("merge.conf", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Queues) != 2 || res.Queues[0].Attributes["DelaySeconds"] != "3" || res.Queues[0].Attributes["ReceiveMessageWaitTimeSeconds"] != "2" {
		t.Errorf("merged queues %+v, want q with delay 3 and wait 2, then r", res.Queues)
	}
}
