//go:build fifoq_faults

package replog

import (
	"os"
	"strconv"
)

// A binary built with -tags fifoq_faults stands in for an older fifoq when
// FIFOQ_TEST_MAX_ENTRY_FORMAT names an entry format older than this one's
// newest: it reads and writes formats up to that one only, refuses newer
// entries and the actions they bring as a fifoq of that version does, and
// says that format in its hellos. The cluster tests' rolling upgrade runs
// such nodes beside normal ones (internal/clustertest).
func init() {
	n, err := strconv.Atoi(os.Getenv("FIFOQ_TEST_MAX_ENTRY_FORMAT"))
	if err != nil || n < int(minVersionBinary) || n >= int(maxEntryFormat) {
		return
	}
	maxEntryFormat = byte(n)
}
