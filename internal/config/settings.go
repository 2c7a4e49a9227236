package config

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/fifoq/fifoq/internal/api"
	"github.com/fifoq/fifoq/internal/memguard"
)

// Kind is the type of a setting's value.
type Kind int

// The kinds of settings.
const (
	// String is any text.
	String Kind = iota + 1
	// Path is a file or directory path; in the file, a relative path is
	// relative to the file's directory.
	Path
	// Bool is true or false.
	Bool
	// Int is a decimal integer.
	Int
	// Account is an account id of 12 digits.
	Account
	// Duration is a length of time as Go writes it ("60s", "1m30s", "0"),
	// not negative.
	Duration
	// Size is a number of bytes, with an optional binary unit ("512MiB",
	// "2GiB", "1073741824"), as memguard.ParseSize reads it.
	Size
	// Count is a decimal integer, or "auto".
	Count
)

// Setting is one server setting, which the command line, the environment
// and the config file can each give.
type Setting struct {
	// Key is the setting's key in the file; a dot separates a section from
	// its key ("log.json" is json: under log:).
	Key string
	// Flag is the fifoq serve flag, without dashes.
	Flag string
	// Env is the environment variable.
	Env string
	// Kind is the type of the value.
	Kind Kind
}

// Settings are the settings Resolve merges, in the order the README lists
// them. The credentials file's keys (credentials.keys) and the queues are
// not settings: they exist in the file only.
var Settings = []Setting{
	{Key: "listen", Flag: "listen", Env: "FIFOQ_LISTEN", Kind: String},
	{Key: "data_dir", Flag: "data-dir", Env: "FIFOQ_DATA_DIR", Kind: Path},
	{Key: "in_memory", Flag: "in-memory", Env: "FIFOQ_IN_MEMORY", Kind: Bool},
	{Key: "min_free_disk_mb", Flag: "min-free-disk-mb", Env: "FIFOQ_MIN_FREE_DISK_MB", Kind: Int},
	{Key: "max_memory", Flag: "max-memory", Env: "FIFOQ_MAX_MEMORY", Kind: Size},
	{Key: "body_file_size", Flag: "body-file-size", Env: "FIFOQ_BODY_FILE_SIZE", Kind: Size},
	{Key: "account", Flag: "account", Env: "FIFOQ_ACCOUNT", Kind: Account},
	{Key: "region", Flag: "region", Env: "FIFOQ_REGION", Kind: String},
	{Key: "single_region", Flag: "single-region", Env: "FIFOQ_SINGLE_REGION", Kind: Bool},
	{Key: "insecure", Flag: "insecure", Env: "FIFOQ_INSECURE", Kind: Bool},
	{Key: "log.json", Flag: "log-json", Env: "FIFOQ_LOG_JSON", Kind: Bool},
	{Key: "log.requests", Flag: "log-requests", Env: "FIFOQ_LOG_REQUESTS", Kind: Bool},
	{Key: "credentials.file", Flag: "credentials", Env: "FIFOQ_CREDENTIALS", Kind: Path},
	{Key: "tls.cert", Flag: "tls-cert", Env: "FIFOQ_TLS_CERT", Kind: Path},
	{Key: "tls.key", Flag: "tls-key", Env: "FIFOQ_TLS_KEY", Kind: Path},
	{Key: "recreate_delay", Flag: "recreate-delay", Env: "FIFOQ_RECREATE_DELAY", Kind: Duration},
	{Key: "purge_delay", Flag: "purge-delay", Env: "FIFOQ_PURGE_DELAY", Kind: Duration},
	{Key: "node_id", Flag: "node-id", Env: "FIFOQ_NODE_ID", Kind: String},
	{Key: "raft_addr", Flag: "raft-addr", Env: "FIFOQ_RAFT_ADDR", Kind: String},
	{Key: "peers", Flag: "peers", Env: "FIFOQ_PEERS", Kind: String},
	{Key: "join", Flag: "join", Env: "FIFOQ_JOIN", Kind: String},
	{Key: "advertise_url", Flag: "advertise-url", Env: "FIFOQ_ADVERTISE_URL", Kind: String},
	{Key: "raft_tls.cert", Flag: "raft-tls-cert", Env: "FIFOQ_RAFT_TLS_CERT", Kind: Path},
	{Key: "raft_tls.key", Flag: "raft-tls-key", Env: "FIFOQ_RAFT_TLS_KEY", Kind: Path},
	{Key: "raft_tls.ca", Flag: "raft-tls-ca", Env: "FIFOQ_RAFT_TLS_CA", Kind: Path},
	{Key: "raft_insecure", Flag: "raft-insecure", Env: "FIFOQ_RAFT_INSECURE", Kind: Bool},
	{Key: "max_clock_offset", Flag: "max-clock-offset", Env: "FIFOQ_MAX_CLOCK_OFFSET", Kind: Duration},
	{Key: "shards", Flag: "shards", Env: "FIFOQ_SHARDS", Kind: Count},
	{Key: "partition_split_rate", Flag: "partition-split-rate", Env: "FIFOQ_PARTITION_SPLIT_RATE", Kind: Int},
}

// The config file's own flag and environment variable.
const (
	ConfigFlag = "config"
	ConfigEnv  = "FIFOQ_CONFIG"
)

// ConfigPath returns the config file to load: the --config flag if the
// command line set it, else FIFOQ_CONFIG; "" if neither names one.
func ConfigPath(fs *flag.FlagSet, lookupEnv func(string) (string, bool)) string {
	if f := fs.Lookup(ConfigFlag); f != nil && flagSet(fs, ConfigFlag) {
		return f.Value.String()
	}
	v, _ := lookupEnv(ConfigEnv)
	return v
}

// Resolve gives every setting its value by precedence: the flag if the
// command line set it (as flag.FlagSet.Visit reports), else the setting's
// FIFOQ_ environment variable if it is set and not empty, else the file
// (f may be nil), else the flag's default. It writes the chosen values into
// the flags of fs with fs.Set, so that the variables bound to the flags
// hold the settings in effect. fs must define a flag for every setting.
// Errors name the environment variable or the file and line at fault.
func Resolve(fs *flag.FlagSet, f *File, lookupEnv func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, s := range Settings {
		if fs.Lookup(s.Flag) == nil {
			return fmt.Errorf("config: setting %s has no flag --%s", s.Key, s.Flag)
		}
		if given[s.Flag] {
			continue
		}
		if v, ok := lookupEnv(s.Env); ok && v != "" {
			if err := checkValue(s.Kind, v); err != nil {
				return fmt.Errorf("environment variable %s=%q: %v", s.Env, v, err)
			}
			if err := fs.Set(s.Flag, v); err != nil {
				return fmt.Errorf("environment variable %s=%q: %v", s.Env, v, err)
			}
			continue
		}
		if f == nil {
			continue
		}
		if v, ok := f.settings[s.Key]; ok {
			if err := fs.Set(s.Flag, v.text); err != nil {
				return &Error{File: f.Path, Line: v.line, Msg: s.Key, Err: err}
			}
		}
	}
	return nil
}

// checkValue checks text given for a setting of kind k.
func checkValue(k Kind, text string) error {
	switch k {
	case Bool:
		if _, err := strconv.ParseBool(text); err != nil {
			return fmt.Errorf("want true or false")
		}
	case Int:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return fmt.Errorf("want a decimal integer")
		}
	case Account:
		if !api.IsAccountID(text) {
			return fmt.Errorf("an account id is 12 digits")
		}
	case Duration:
		return checkDuration(text)
	case Size:
		_, err := memguard.ParseSize(text)
		return err
	case Count:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil && text != "auto" {
			return fmt.Errorf("want a decimal integer, or auto")
		}
	}
	return nil
}

// checkDuration checks the text of a Duration setting: a duration as
// time.ParseDuration reads it, not negative.
func checkDuration(text string) error {
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 60s or 1m30s, or 0")
	}
	return nil
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
