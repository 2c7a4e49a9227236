package config

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// serveFlags is a flag set with a flag for every setting, as fifoq serve
// defines them, with their defaults, and --config.
type serveFlags struct {
	fs                                  *flag.FlagSet
	listen, dataDir, account, region    string
	creds, tlsCert, tlsKey, config      string
	minFree                             int64
	inMemory, insecure, logJSON, logReq bool
	raftInsecure, singleRegion          bool
	maxClockOffset                      time.Duration
	shards, partitionSplitRate          int
	recreateDelay, purgeDelay           time.Duration
	maxMemory, bodyFileSize             string
	cluster                             [8]string
}

func newServeFlags(t *testing.T, args ...string) *serveFlags {
	t.Helper()
	f := &serveFlags{fs: flag.NewFlagSet("serve", flag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.StringVar(&f.listen, "listen", "127.0.0.1:9324", "")
	f.fs.StringVar(&f.dataDir, "data-dir", "./fifoq-data", "")
	f.fs.BoolVar(&f.inMemory, "in-memory", false, "")
	f.fs.Int64Var(&f.minFree, "min-free-disk-mb", 64, "")
	f.fs.StringVar(&f.maxMemory, "max-memory", "", "")
	f.fs.StringVar(&f.bodyFileSize, "body-file-size", "64MiB", "")
	f.fs.StringVar(&f.account, "account", "000000000000", "")
	f.fs.StringVar(&f.region, "region", "us-east-1", "")
	f.fs.BoolVar(&f.insecure, "insecure", false, "")
	f.fs.BoolVar(&f.singleRegion, "single-region", false, "")
	f.fs.BoolVar(&f.logJSON, "log-json", false, "")
	f.fs.BoolVar(&f.logReq, "log-requests", false, "")
	f.fs.StringVar(&f.creds, "credentials", "", "")
	f.fs.StringVar(&f.tlsCert, "tls-cert", "", "")
	f.fs.StringVar(&f.tlsKey, "tls-key", "", "")
	f.fs.DurationVar(&f.recreateDelay, "recreate-delay", 60*time.Second, "")
	f.fs.DurationVar(&f.purgeDelay, "purge-delay", 60*time.Second, "")
	for i, name := range []string{"node-id", "raft-addr", "peers", "join", "advertise-url", "raft-tls-cert", "raft-tls-key", "raft-tls-ca"} {
		f.fs.StringVar(&f.cluster[i], name, "", "")
	}
	f.fs.BoolVar(&f.raftInsecure, "raft-insecure", false, "")
	f.fs.DurationVar(&f.maxClockOffset, "max-clock-offset", 500*time.Millisecond, "")
	f.fs.IntVar(&f.shards, "shards", 1, "")
	f.fs.IntVar(&f.partitionSplitRate, "partition-split-rate", 300, "")
	f.fs.StringVar(&f.config, "config", "", "")
	if err := f.fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// values reads back every setting as its flag's text.
func (f *serveFlags) values() map[string]string {
	out := map[string]string{}
	for _, s := range Settings {
		out[s.Key] = f.fs.Lookup(s.Flag).Value.String()
	}
	return out
}

const precedenceFile = `
listen: 10.0.0.1:9324
data_dir: /srv/fifoq
min_free_disk_mb: 128
account: "111111111111"
region: eu-west-1
log:
  json: true
  requests: true
insecure: true
credentials:
  file: /srv/creds
tls:
  cert: /srv/cert.pem
  key: /srv/key.pem
recreate_delay: 5s
purge_delay: 0
`

// TestResolvePrecedence checks flag > FIFOQ_ variable > file > default,
// setting by setting.
func TestResolvePrecedence(t *testing.T) {
	file, err := Parse("f.yaml", []byte(precedenceFile), env{}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  env
		file *File
		want map[string]string // settings that differ from the defaults
	}{
		{name: "defaults", want: map[string]string{}},
		{name: "file", file: file, want: map[string]string{
			"listen": "10.0.0.1:9324", "data_dir": "/srv/fifoq", "min_free_disk_mb": "128", "account": "111111111111",
			"region": "eu-west-1", "log.json": "true", "log.requests": "true", "insecure": "true",
			"credentials.file": "/srv/creds", "tls.cert": "/srv/cert.pem", "tls.key": "/srv/key.pem",
			"recreate_delay": "5s", "purge_delay": "0s",
		}},
		{name: "environment over file", file: file, env: env{
			"FIFOQ_LISTEN": "10.0.0.2:9324", "FIFOQ_DATA_DIR": "/env/data", "FIFOQ_IN_MEMORY": "true",
			"FIFOQ_MIN_FREE_DISK_MB": "0", "FIFOQ_ACCOUNT": "222222222222", "FIFOQ_REGION": "ap-south-1",
			"FIFOQ_INSECURE": "false", "FIFOQ_LOG_JSON": "false", "FIFOQ_LOG_REQUESTS": "0",
			"FIFOQ_CREDENTIALS": "/env/creds", "FIFOQ_TLS_CERT": "/env/cert", "FIFOQ_TLS_KEY": "/env/key",
			"FIFOQ_RECREATE_DELAY": "2m", "FIFOQ_PURGE_DELAY": "1s",
		}, want: map[string]string{
			"listen": "10.0.0.2:9324", "data_dir": "/env/data", "in_memory": "true", "min_free_disk_mb": "0",
			"account": "222222222222", "region": "ap-south-1", "credentials.file": "/env/creds",
			"tls.cert": "/env/cert", "tls.key": "/env/key", "recreate_delay": "2m0s", "purge_delay": "1s",
		}},
		{name: "empty environment variable is unset", file: file, env: env{"FIFOQ_REGION": "", "FIFOQ_LOG_JSON": ""},
			want: map[string]string{
				"listen": "10.0.0.1:9324", "data_dir": "/srv/fifoq", "min_free_disk_mb": "128", "account": "111111111111",
				"region": "eu-west-1", "log.json": "true", "log.requests": "true", "insecure": "true",
				"credentials.file": "/srv/creds", "tls.cert": "/srv/cert.pem", "tls.key": "/srv/key.pem",
				"recreate_delay": "5s", "purge_delay": "0s",
			}},
		{name: "flags over environment and file", file: file,
			args: []string{"--listen", "127.0.0.1:1", "--data-dir", "/flag/data", "--account", "333333333333",
				"--log-json=false", "--insecure=false", "--min-free-disk-mb", "64", "--credentials", "", "--tls-cert", "c", "--tls-key", "k"},
			env: env{"FIFOQ_LISTEN": "10.0.0.2:9324", "FIFOQ_ACCOUNT": "222222222222", "FIFOQ_REGION": "ap-south-1"},
			want: map[string]string{
				// A flag set to its default value still wins.
				"listen": "127.0.0.1:1", "data_dir": "/flag/data", "account": "333333333333", "region": "ap-south-1",
				"log.requests": "true", "credentials.file": "", "tls.cert": "c", "tls.key": "k",
				"recreate_delay": "5s", "purge_delay": "0s",
			}},
	}
	defaults := newServeFlags(t).values()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newServeFlags(t, tt.args...)
			if err := Resolve(f.fs, tt.file, tt.env.lookup); err != nil {
				t.Fatal(err)
			}
			got := f.values()
			for key, def := range defaults {
				want, ok := tt.want[key]
				if !ok {
					want = def
				}
				if got[key] != want {
					t.Errorf("%s = %q, want %q", key, got[key], want)
				}
			}
		})
	}
}

// TestResolveBoundVariables checks that Resolve writes through to the
// variables bound to the flags, which is how fifoq serve reads them.
func TestResolveBoundVariables(t *testing.T) {
	file, err := Parse("f.yaml", []byte(precedenceFile), env{}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	f := newServeFlags(t, "--region", "sa-east-1")
	if err := Resolve(f.fs, file, env{"FIFOQ_IN_MEMORY": "1"}.lookup); err != nil {
		t.Fatal(err)
	}
	if f.listen != "10.0.0.1:9324" || f.region != "sa-east-1" || !f.inMemory || f.minFree != 128 || !f.logJSON {
		t.Errorf("bound variables: %+v", f)
	}
}

// TestResolveBadEnvironment checks that a bad FIFOQ_ value is refused with
// the variable's name.
func TestResolveBadEnvironment(t *testing.T) {
	for name, value := range map[string]string{
		"FIFOQ_LOG_JSON":         "maybe",
		"FIFOQ_IN_MEMORY":        "yes",
		"FIFOQ_MIN_FREE_DISK_MB": "64MiB",
		"FIFOQ_ACCOUNT":          "12345",
		"FIFOQ_RECREATE_DELAY":   "60",
		"FIFOQ_PURGE_DELAY":      "-1s",
	} {
		f := newServeFlags(t)
		err := Resolve(f.fs, nil, env{name: value}.lookup)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: err = %v, want an error naming the variable", name, value, err)
		}
	}
	// A flag set on the command line is not overridden, so its variable is
	// not even read.
	f := newServeFlags(t, "--account", "444444444444")
	if err := Resolve(f.fs, nil, env{"FIFOQ_ACCOUNT": "bad"}.lookup); err != nil || f.account != "444444444444" {
		t.Errorf("flag over a bad variable: %v, account %s", err, f.account)
	}
}

// TestResolveMissingFlag checks that a setting without its flag is a
// programming error Resolve reports rather than a setting silently lost.
func TestResolveMissingFlag(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.String("listen", "", "")
	err := Resolve(fs, nil, env{}.lookup)
	if err == nil || !strings.Contains(err.Error(), "no flag --data-dir") {
		t.Errorf("err = %v, want a missing --data-dir", err)
	}
}

// TestConfigPath checks that --config wins over FIFOQ_CONFIG.
func TestConfigPath(t *testing.T) {
	tests := []struct {
		args []string
		env  env
		want string
	}{
		{nil, env{}, ""},
		{nil, env{"FIFOQ_CONFIG": "/env.yaml"}, "/env.yaml"},
		{[]string{"--config", "/flag.yaml"}, env{"FIFOQ_CONFIG": "/env.yaml"}, "/flag.yaml"},
		// --config "" on the command line says: no file, whatever the environment says.
		{[]string{"--config", ""}, env{"FIFOQ_CONFIG": "/env.yaml"}, ""},
	}
	for _, tt := range tests {
		f := newServeFlags(t, tt.args...)
		if got := ConfigPath(f.fs, tt.env.lookup); got != tt.want {
			t.Errorf("ConfigPath(%v, %v) = %q, want %q", tt.args, tt.env, got, tt.want)
		}
	}
}

// TestResolveFileErrorNamesLine checks an error from the file's value.
func TestResolveFileErrorNamesLine(t *testing.T) {
	file := &File{Path: "f.yaml", settings: map[string]value{"min_free_disk_mb": {text: "x", line: 7}}}
	err := Resolve(newServeFlags(t).fs, file, env{}.lookup)
	var e *Error
	if !errors.As(err, &e) || e.Line != 7 || !strings.HasPrefix(err.Error(), "f.yaml:7: ") {
		t.Errorf("err = %v, want one at f.yaml:7", err)
	}
}
