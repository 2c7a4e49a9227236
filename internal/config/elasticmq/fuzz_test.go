package elasticmq

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fifoq/fifoq/internal/config"
)

// FuzzFromElasticMQ feeds arbitrary bytes to the converter. It must never
// panic; a refusal must be an *Error naming the file; and whatever it
// converts must load as fifoq's config file, pass the checks fifoq serve
// makes before it opens its data, declare the queues Convert returned,
// and come out the same every time.
func FuzzFromElasticMQ(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.conf")
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	for _, s := range []string{
		"",
		"queues {}",
		"queues { q { delay = 5 } }",
		"queues { \"a.fifo\" { fifo = true, contentBasedDeduplication = yes } }",
		"queues {\n d {}\n q { deadLettersQueue { name = d, maxReceiveCount = 1000 }, tags { a = b } }\n}",
		"{ queues.x.defaultVisibilityTimeout: 12h }",
		"queues { q { receiveMessageWait = \"20 seconds\" } } // end",
		"a = [1, {b = [c]}, \"d\"]\nqueues { q {} }\n",
		"include classpath(\"application.conf\")\nqueues { q { copyTo = x }, x {} }",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		res, err := Convert("fuzz.conf", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "fuzz.conf" || e.Line < 0 {
				t.Fatalf("Convert refused with %T %v, want an *Error naming fuzz.conf", err, err)
			}
			return
		}
		file, err := config.Parse("out.yaml", res.YAML, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("the output does not load: %v\n%s", err, res.YAML)
		}
		if err := file.Check("000000000000", "us-east-1"); err != nil {
			t.Fatalf("the output fails fifoq serve's check: %v\n%s", err, res.YAML)
		}
		if len(file.Queues) != len(res.Queues) {
			t.Fatalf("the output declares %d queues, Convert returned %d\n%s", len(file.Queues), len(res.Queues), res.YAML)
		}
		for i, q := range file.Queues {
			if q.Name != res.Queues[i].Name {
				t.Fatalf("queue %d of the output is %s, Convert returned %s", i, q.Name, res.Queues[i].Name)
			}
		}
		again, err := Convert("fuzz.conf", src)
		if err != nil || !bytes.Equal(again.YAML, res.YAML) {
			t.Fatalf("a second conversion differs: %v\n%s\n%s", err, res.YAML, again.YAML)
		}
	})
}
