package config

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the config file parser: it must never
// panic, and every refusal must be an *Error naming the file, so that an
// operator always learns where to look.
func FuzzParse(f *testing.F) {
	if example, err := os.ReadFile("../../fifoq.example.yaml"); err == nil {
		f.Add(example)
	}
	for _, s := range []string{
		"",
		"listen: 127.0.0.1:9324\n",
		"queues:\n  - name: a.fifo\n    attributes: {FifoQueue: true}\n    dead_letter: {queue: b.fifo, max_receive_count: 3}\n  - name: b.fifo\n    attributes: {FifoQueue: true}\n",
		"queues:\n  - name: q\n    policy: {Version: \"2012-10-17\", Statement: [{Effect: Allow, Principal: \"*\", Action: \"sqs:*\"}]}\n",
		"credentials:\n  keys:\n    - {access_key_id: AKIA1, secret_access_key: ${SECRET}}\n",
		"a: &x [*x]\n",
		"log: {json: true, requests: yes}\n",
	} {
		f.Add([]byte(s))
	}
	env := func(name string) (string, bool) {
		if name == "SECRET" {
			return "s3cret", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, env)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "fuzz.yaml" || ce.Line < 0 {
				t.Fatalf("Parse refused with %T %v, want an *Error naming fuzz.yaml", err, err)
			}
			return
		}
		if file == nil {
			t.Fatal("Parse returned neither a file nor an error")
		}
	})
}
