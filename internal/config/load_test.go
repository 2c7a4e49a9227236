package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// env is a fake environment for lookupEnv.
type env map[string]string

func (e env) lookup(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

// TestParseBadFiles checks that each bad file is refused with an *Error
// at the line of the problem, saying what it is.
func TestParseBadFiles(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		wantLine int
		want     string // a part of the message
	}{
		// The YAML parser reports the line where the construct it was
		// reading began, which is where to look.
		{"syntax error", "listen: 127.0.0.1:9324\nqueues:\n  - name: a\n   attributes: {}\n", 2, "YAML syntax: did not find expected '-' indicator"},
		{"unclosed flow", "queues: [\n", 1, "YAML syntax"},
		{"tab indentation", "log:\n\tjson: true\n", 2, "YAML syntax"},
		{"two documents", "listen: a:1\n---\nlisten: b:2\n", 2, "second YAML document"},
		{"top level is a list", "- listen\n", 1, "must be a mapping"},
		{"unknown top-level key", "listen: a:1\nlisen: b:2\n", 2, `unknown key "lisen"`},
		{"duplicate key", "listen: a:1\nregion: r\nlisten: b:2\n", 3, `"listen" appears twice (first on line 1)`},
		{"merge key", "base: &b {listen: a:1}\n", 1, `unknown key "base"`},
		{"merge key refused", "log:\n  <<: {json: true}\n", 2, "merge keys"},
		{"unknown key in section", "log:\n  json: true\n  level: debug\n", 3, `log:: unknown key "level"`},
		{"section not a mapping", "log: true\n", 1, "log: must be a mapping"},
		{"bool setting given a string", "insecure: yes\n", 1, "insecure must be true or false"},
		{"bool setting given a number", "log:\n  json: 1\n", 2, "log.json must be true or false"},
		{"int setting given a string", "min_free_disk_mb: lots\n", 1, "min_free_disk_mb must be an integer"},
		{"size in decimal units", "max_memory: 1G\n", 1, "max_memory: size \"1G\": want a whole number of bytes"},
		{"string setting given a list", "listen:\n  - a:1\n", 2, "listen must be a string"},
		{"string setting given null", "region:\n", 1, "region must be a string"},
		{"bad account", "account: 12345\n", 1, `"12345" is not an account id`},
		{"queues not a list", "queues: {name: a}\n", 1, "queues must be a list"},
		{"queue without name", "queues:\n  - attributes: {VisibilityTimeout: 5}\n", 2, "name is missing"},
		{"unknown queue key", "queues:\n  - name: a\n    atributes: {}\n", 3, `unknown key "atributes"`},
		{"bad queue name", "queues:\n  - name: a\n  - name: bad name!\n", 3, "InvalidParameterValue"},
		{"name too long", "queues:\n  - name: " + strings.Repeat("x", 81) + "\n", 2, "1 to 80 in length"},
		{"duplicate queue", "queues:\n  - name: a\n  - name: b\n  - name: a\n", 4, "declared twice (first on line 2)"},
		{"duplicate queue via account", "account: \"123456789012\"\nqueues:\n  - name: a\n  - name: a\n    account: \"123456789012\"\n", 4, "declared twice"},
		{"bad queue account", "queues:\n  - name: a\n    account: abc\n", 3, "not an account id"},
		{"unknown attribute", "queues:\n  - name: a\n    attributes:\n      VisibilityTimeout: 5\n      Visibility: 5\n", 5, "InvalidAttributeName"},
		{"read-only attribute", "queues:\n  - name: a\n    attributes:\n      QueueArn: x\n", 4, "InvalidAttributeName"},
		{"attribute out of range", "queues:\n  - name: a\n    attributes:\n      DelaySeconds: 901\n", 4, "Invalid value for the parameter DelaySeconds"},
		{"attribute not a number", "queues:\n  - name: a\n    attributes:\n      VisibilityTimeout: soon\n", 4, "VisibilityTimeout"},
		{"attribute given a mapping", "queues:\n  - name: a\n    attributes:\n      VisibilityTimeout: {s: 1}\n", 4, "must be a value"},
		{"attribute given null", "queues:\n  - name: a\n    attributes:\n      DelaySeconds:\n", 4, "must be a value"},
		{"fifo name without FifoQueue", "queues:\n  - name: a.fifo\n", 2, "add FifoQueue: true"},
		{"FifoQueue false on a fifo name", "queues:\n  - name: a.fifo\n    attributes:\n      VisibilityTimeout: 5\n      FifoQueue: false\n", 5, "the type cannot change"},
		{"FifoQueue true on a standard name", "queues:\n  - name: a\n    attributes:\n      FifoQueue: true\n", 4, "needs a name that ends in .fifo"},
		{"FifoQueue True (any case, as SQS reads it) on a standard name", "queues:\n  - name: a\n    attributes:\n      FifoQueue: \"True\"\n", 4, "needs a name that ends in .fifo"},
		{"fifo-only attribute on a standard queue", "queues:\n  - name: a\n    attributes:\n      ContentBasedDeduplication: true\n", 4, "InvalidAttributeName"},
		{"throughput without scope", "queues:\n  - name: a.fifo\n    attributes:\n      FifoQueue: true\n      FifoThroughputLimit: perMessageGroupId\n", 3, "DeduplicationScope"},
		{"policy not JSON", "queues:\n  - name: a\n    policy: 'not json'\n", 3, "Policy"},
		{"policy refused by the policy checker", "queues:\n  - name: a\n    policy:\n      Statement:\n        - Effect: Allow\n          Principal: {Bogus: x}\n          Action: sqs:SendMessage\n", 3, "Invalid value for the parameter Policy"},
		{"policy given twice", "queues:\n  - name: a\n    attributes:\n      Policy: '{}'\n    policy: {Statement: []}\n", 5, "both give the policy (line 4)"},
		{"dead_letter and RedrivePolicy", "queues:\n  - name: d\n  - name: a\n    attributes:\n      RedrivePolicy: {deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:d', maxReceiveCount: 3}\n    dead_letter: {queue: d, max_receive_count: 3}\n", 6, "both give the dead-letter queue (line 5)"},
		{"dead_letter without queue", "queues:\n  - name: a\n    dead_letter: {max_receive_count: 3}\n", 3, "queue is missing"},
		{"dead_letter without count", "queues:\n  - name: a\n    dead_letter:\n      queue: d\n", 4, "max_receive_count is missing"},
		{"dead_letter count out of range", "queues:\n  - name: a\n    dead_letter:\n      queue: d\n      max_receive_count: 1001\n", 5, "out of range (1 to 1000)"},
		{"dead_letter unknown key", "queues:\n  - name: a\n    dead_letter:\n      queue: d\n      max_receives: 3\n", 5, `unknown key "max_receives"`},
		{"dead_letter to itself", "queues:\n  - name: a\n    dead_letter: {queue: a, max_receive_count: 3}\n", 3, "its own dead-letter queue"},
		{"dead_letter of another type", "queues:\n  - name: a.fifo\n    attributes: {FifoQueue: true}\n    dead_letter: {queue: d, max_receive_count: 3}\n", 4, "same type"},
		{"dead_letter bad name", "queues:\n  - name: a\n    dead_letter: {queue: 'no/such', max_receive_count: 3}\n", 3, "dead-letter queue name"},
		{"dead_letter cycle", "queues:\n  - name: a\n    dead_letter: {queue: b, max_receive_count: 3}\n  - name: b\n    dead_letter: {queue: a, max_receive_count: 3}\n", 3, "cycle: a -> b -> a"},
		{"raw RedrivePolicy of another region", "queues:\n  - name: a\n    attributes:\n      RedrivePolicy: '{\"deadLetterTargetArn\":\"arn:aws:sqs:eu-west-1:000000000000:d\",\"maxReceiveCount\":3}'\n", 4, "region eu-west-1"},
		{"raw RedrivePolicy of another account", "queues:\n  - name: a\n    attributes:\n      RedrivePolicy: '{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:111111111111:d\",\"maxReceiveCount\":3}'\n", 4, "account 111111111111"},
		{"raw RedrivePolicy malformed", "queues:\n  - name: a\n    attributes:\n      RedrivePolicy: '{\"maxReceiveCount\":3}'\n", 4, "deadLetterTargetArn"},
		{"too many tags", "queues:\n  - name: a\n    tags: {" + manyTags(51) + "}\n", 3, "Too many tags"},
		{"tag key too long", "queues:\n  - name: a\n    tags:\n      " + strings.Repeat("k", 129) + ": v\n", 3, "Tag keys"},
		{"tag value a list", "queues:\n  - name: a\n    tags:\n      team: [a, b]\n", 4, "tag team must be a value"},
		{"key without secret", "credentials:\n  keys:\n    - access_key_id: AKIA1\n", 3, "secret_access_key is missing"},
		{"key with unset env", "credentials:\n  keys:\n    - access_key_id: AKIA1\n      secret_access_key: ${NOT_SET_ANYWHERE}\n", 4, "environment variable NOT_SET_ANYWHERE is not set"},
		{"key with partial env ref", "credentials:\n  keys:\n    - access_key_id: AKIA1\n      secret_access_key: x${SECRET}\n", 4, "must be the whole value"},
		{"key with bad account", "credentials:\n  keys:\n    - access_key_id: AKIA1\n      secret_access_key: s\n      account: \"1\"\n", 3, "not 12 digits"},
		{"key with space in secret", "credentials:\n  keys:\n    - access_key_id: AKIA1\n      secret_access_key: 'a b'\n", 3, "space or control character"},
		{"key defined twice", "credentials:\n  keys:\n    - {access_key_id: AKIA1, secret_access_key: s1}\n    - {access_key_id: AKIA1, secret_access_key: s2}\n", 4, "already defined on line 3"},
		{"unknown credentials key", "credentials:\n  path: x\n", 2, `unknown key "path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.yaml), env{"SECRET": "s"}.lookup)
			if err == nil {
				t.Fatalf("Parse succeeded, want an error at line %d", tt.wantLine)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if e.File != "bad.yaml" || e.Line != tt.wantLine {
				t.Errorf("error at %s:%d, want bad.yaml:%d: %v", e.File, e.Line, tt.wantLine, err)
			}
			prefix := "bad.yaml:" + itoa(tt.wantLine) + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to begin %q and contain %q", err, prefix, tt.want)
			}
		})
	}
}

// TestSecretsNeverInErrors checks that refusing a key never quotes its secret.
func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "sup3r-s3cret"
	for _, yaml := range []string{
		"credentials:\n  keys:\n    - access_key_id: AKIA1\n      secret_access_key: '" + secret + " x'\n",
		"credentials:\n  keys:\n    - access_key_id: 'bad/id'\n      secret_access_key: '" + secret + "'\n",
		"credentials:\n  keys:\n    - access_key_id: AKIA1\n      secret_access_key: ${S}\n      account: x\n",
	} {
		_, err := Parse("c.yaml", []byte(yaml), env{"S": secret}.lookup)
		if err == nil {
			t.Fatalf("Parse(%q) succeeded, want an error", yaml)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows the secret", err)
		}
	}
	f, err := Parse("c.yaml", []byte("credentials:\n  keys:\n    - {access_key_id: AKIA1, secret_access_key: '${S}'}\n"), env{"S": secret}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{f.Keys[0].String(), strings.TrimSpace(sprintf("%v %+v %#v", f.Keys[0], f.Keys, f.Keys[0]))} {
		if strings.Contains(s, secret) {
			t.Errorf("%q shows the secret", s)
		}
	}
}

// goodFile is a configuration file with every kind of entry, for
// TestParseGoodFile. The dead-letter entry of jobs is on line 27, which the
// test checks that the parsed queue records.
const goodFile = `
# every setting
listen: 0.0.0.0:9324
data_dir: data            # relative: to the file's directory
in_memory: false
min_free_disk_mb: 0x40
account: 000000000000     # digits need no quotes
region: eu-west-1
insecure: false
log:
  json: true
  requests: true
credentials:
  file: /etc/fifoq/credentials
  keys:
    - access_key_id: AKIAFIFOQ1
      secret_access_key: ${FIFOQ_TEST_SECRET}
    - {access_key_id: AKIAFIFOQ2, admin: true,
       secret_access_key: literal-secret,
       account: "111111111111"}
tls:
  cert: tls/cert.pem
  key: tls/key.pem
queues:
  - name: jobs
    account: "222222222222"
    dead_letter: {queue: jobs-dlq, max_receive_count: 0x5}
  - name: jobs-dlq
    account: "222222222222"
    attributes:
      MessageRetentionPeriod: 1209600
      SqsManagedSseEnabled: false
      KmsMasterKeyId: alias/fifoq
      RedriveAllowPolicy:
        redrivePermission: byQueue
        sourceQueueArns: ["arn:aws:sqs:eu-west-1:222222222222:jobs"]
    tags: &common
      team: core
  - name: events.fifo
    attributes:
      FifoQueue: true
      DeduplicationScope: messageGroup
      FifoThroughputLimit: perMessageGroupId
      VisibilityTimeout: "030"
    tags:
      cost-centre: 42
      public: false
    policy: '{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:GetQueueAttributes"}]}'
  - name: plain
    tags: *common            # anchors and aliases work
    attributes:
      FifoQueue: false
recreate_delay: 0
purge_delay: 1m30s
max_memory: 2GiB
body_file_size: 16MiB
node_id: n1
raft_addr: 10.0.0.1:7000
peers: n1=10.0.0.1:7000,n2=10.0.0.2:7000,n3=10.0.0.3:7000
join: http://10.0.0.2:9324
advertise_url: http://10.0.0.1:9324
raft_tls:
  cert: tls/node.pem
  key: tls/node-key.pem
  ca: tls/ca.pem
raft_insecure: true
max_clock_offset: 250ms
shards: 3
partition_split_rate: 500
single_region: true
`

// goodFileSettings is what each setting of goodFile loads as, read from
// /etc/fifoq/fifoq.yaml: relative paths are resolved against /etc/fifoq.
var goodFileSettings = map[string]string{
	"listen": "0.0.0.0:9324", "data_dir": "/etc/fifoq/data", "in_memory": "false", "min_free_disk_mb": "64",
	"max_memory": "2GiB", "body_file_size": "16MiB", "account": "000000000000", "region": "eu-west-1", "single_region": "true", "insecure": "false", "log.json": "true",
	"log.requests": "true", "credentials.file": "/etc/fifoq/credentials",
	"tls.cert": "/etc/fifoq/tls/cert.pem", "tls.key": "/etc/fifoq/tls/key.pem",
	"recreate_delay": "0", "purge_delay": "1m30s",
	"node_id": "n1", "raft_addr": "10.0.0.1:7000", "peers": "n1=10.0.0.1:7000,n2=10.0.0.2:7000,n3=10.0.0.3:7000",
	"join": "http://10.0.0.2:9324", "advertise_url": "http://10.0.0.1:9324",
	"raft_tls.cert": "/etc/fifoq/tls/node.pem", "raft_tls.key": "/etc/fifoq/tls/node-key.pem", "raft_tls.ca": "/etc/fifoq/tls/ca.pem",
	"raft_insecure": "true", "max_clock_offset": "250ms", "shards": "3",
	"partition_split_rate": "500",
}

// TestParseGoodFile checks what a file with every kind of entry loads as.
func TestParseGoodFile(t *testing.T) {
	f, err := Parse("/etc/fifoq/fifoq.yaml", []byte(goodFile), env{"FIFOQ_TEST_SECRET": "from-env"}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		got, ok := f.Setting(s.Key)
		if want := goodFileSettings[s.Key]; !ok || got != want {
			t.Errorf("setting %s = %q (given: %v), want %q", s.Key, got, ok, want)
		}
	}
	checkGoodFileKeys(t, f)
	checkGoodFileQueues(t, f)
	checkGoodFilePlan(t, f)
}

// checkGoodFileKeys checks goodFile's access keys: the secret taken from the
// environment, the literal one, the admin flag and the accounts; the first
// key names no account, so Credentials gives it the default one.
func checkGoodFileKeys(t *testing.T, f *File) {
	t.Helper()
	if len(f.Keys) != 2 || f.Keys[0].SecretAccessKey != "from-env" || f.Keys[0].Account != "" ||
		f.Keys[1].SecretAccessKey != "literal-secret" || f.Keys[1].Account != "111111111111" || f.Keys[0].Admin || !f.Keys[1].Admin {
		t.Errorf("keys = %+v", f.Keys)
	}
	creds := f.Credentials("333333333333")
	if creds[0].Account != "333333333333" || creds[1].Account != "111111111111" {
		t.Errorf("credentials = %v, want the default account for the first key", creds)
	}
}

// checkGoodFileQueues checks goodFile's four queues: accounts, the dead
// letter, attributes given as YAML values and mappings, tags through an
// alias, the policy, and FifoQueue: false dropped.
func checkGoodFileQueues(t *testing.T, f *File) {
	t.Helper()
	if len(f.Queues) != 4 {
		t.Fatalf("%d queues, want 4", len(f.Queues))
	}
	jobs, dlq, events, plain := f.Queues[0], f.Queues[1], f.Queues[2], f.Queues[3]
	if jobs.Account != "222222222222" || jobs.DeadLetter == nil || *jobs.DeadLetter != (DeadLetter{Queue: "jobs-dlq", MaxReceiveCount: 5, Line: 27}) {
		t.Errorf("jobs = %+v, dead letter %+v", jobs, jobs.DeadLetter)
	}
	wantAttrs := map[string]string{
		"MessageRetentionPeriod": "1209600", "SqsManagedSseEnabled": "false", "KmsMasterKeyId": "alias/fifoq",
		"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:eu-west-1:222222222222:jobs"]}`,
	}
	if !equalMaps(dlq.Attributes, wantAttrs) || !equalMaps(dlq.Tags, map[string]string{"team": "core"}) {
		t.Errorf("jobs-dlq attributes %v tags %v", dlq.Attributes, dlq.Tags)
	}
	if events.Attributes["FifoQueue"] != "true" || events.Attributes["VisibilityTimeout"] != "030" ||
		!equalMaps(events.Tags, map[string]string{"cost-centre": "42", "public": "false"}) ||
		events.Attributes["Policy"] != `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:GetQueueAttributes"}]}` {
		t.Errorf("events.fifo attributes %v tags %v", events.Attributes, events.Tags)
	}
	if _, ok := plain.Attributes["FifoQueue"]; ok || plain.Tags["team"] != "core" {
		t.Errorf("plain: attributes %v tags %v; want FifoQueue: false dropped and the aliased tags", plain.Attributes, plain.Tags)
	}
}

// checkGoodFilePlan checks the order in which goodFile's queues are created
// (dead-letter queues first, file order otherwise) and the RedrivePolicy
// made from the dead_letter entry.
func checkGoodFilePlan(t *testing.T, f *File) {
	t.Helper()
	steps, err := f.plan("000000000000", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range steps {
		order = append(order, s.key.String())
	}
	if want := "222222222222/jobs-dlq 222222222222/jobs 000000000000/events.fifo 000000000000/plain"; strings.Join(order, " ") != want {
		t.Errorf("order %v, want %s", order, want)
	}
	if got, want := steps[1].attrs[api.AttrRedrivePolicy], `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:222222222222:jobs-dlq","maxReceiveCount":5}`; got != want {
		t.Errorf("jobs RedrivePolicy %s, want %s", got, want)
	}
}

// TestParseEmpty checks that files without settings are valid and empty.
func TestParseEmpty(t *testing.T) {
	for _, s := range []string{"", "# only a comment\n", "---\n", "queues:\n", "queues: []\n"} {
		f, err := Parse("e.yaml", []byte(s), env{}.lookup)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if len(f.Queues) != 0 || len(f.Keys) != 0 || len(f.settings) != 0 {
			t.Errorf("Parse(%q) = %+v, want an empty file", s, f)
		}
	}
}

// TestLoadExample loads the repository's example file.
func TestLoadExample(t *testing.T) {
	f, err := Load(examplePath(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range f.Queues {
		names = append(names, q.Name)
	}
	if got := strings.Join(names, " "); got != "orders-dlq.fifo orders.fifo notifications" {
		t.Errorf("example queues %q", got)
	}
	if f.Queues[1].DeadLetter == nil || f.Queues[1].Attributes[api.AttrPolicy] == "" {
		t.Errorf("orders.fifo: dead letter %v, policy %q", f.Queues[1].DeadLetter, f.Queues[1].Attributes[api.AttrPolicy])
	}
}

// TestLoadMissingFile checks the error for a file that cannot be read.
func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.yaml")
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// examplePath is the repository's fifoq.example.yaml.
func examplePath(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "fifoq.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func manyTags(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("k" + itoa(i) + ": v")
	}
	return b.String()
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPolicyFromYAML checks the JSON a policy written as YAML becomes:
// every scalar a string, as IAM policies have them, whatever YAML would
// have made of it (a date, a number).
func TestPolicyFromYAML(t *testing.T) {
	const yaml = `
queues:
  - name: q
    policy:
      Version: 2012-10-17
      Statement:
        - Effect: Allow
          Principal: {AWS: [111111111111, "arn:aws:iam::222222222222:root"]}
          Action: [sqs:SendMessage, sqs:GetQueueUrl]
          Resource: "*"
`
	f, err := Parse("p.yaml", []byte(yaml), env{}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Statement":[{"Action":["sqs:SendMessage","sqs:GetQueueUrl"],"Effect":"Allow","Principal":{"AWS":["111111111111","arn:aws:iam::222222222222:root"]},"Resource":"*"}],"Version":"2012-10-17"}`
	if got := f.Queues[0].Attributes[api.AttrPolicy]; got != want {
		t.Errorf("Policy\n got %s\nwant %s", got, want)
	}
}
