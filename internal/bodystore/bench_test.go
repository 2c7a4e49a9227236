package bodystore

import (
	"strings"
	"testing"
)

// BenchmarkAppendIntoNewStore appends 6,000 bodies of 256 bytes (1.5 MiB,
// what one replica of a shard of a new six-shard cluster gathers in its
// first 20 s of a busy queue) to a store just opened: the cost of a store's
// first seconds, when its gathering buffer grows.
func BenchmarkAppendIntoNewStore(b *testing.B) {
	body := strings.Repeat("x", 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := Open(b.TempDir(), DefaultFileSize)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for j := 0; j < 6000; j++ {
			if _, err := s.Append(body); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
