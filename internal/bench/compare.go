package bench

import (
	"fmt"
	"io"
)

// Comparison is one workload run twice in one invocation: against the
// built-in ceiling endpoint (what the client can do) and against the
// target server.
type Comparison struct {
	// Ceiling is the run against the ceiling endpoint.
	Ceiling *Result `json:"ceiling"`
	// Target is the run against the server being measured.
	Target *Result `json:"target"`
	// SendFraction is the target's send rate as a fraction of the
	// ceiling's; 0 when the ceiling sent nothing.
	SendFraction float64 `json:"send_fraction_of_ceiling"`
	// ReceiveFraction is the same for the receive rate.
	ReceiveFraction float64 `json:"receive_fraction_of_ceiling"`
}

// Compare puts a ceiling run and a target run side by side.
func Compare(ceiling, target *Result) *Comparison {
	c := &Comparison{Ceiling: ceiling, Target: target}
	if ceiling.SendRate > 0 {
		c.SendFraction = target.SendRate / ceiling.SendRate
	}
	if ceiling.ReceiveRate > 0 {
		c.ReceiveFraction = target.ReceiveRate / ceiling.ReceiveRate
	}
	return c
}

// OK reports whether both runs verified and had no errors.
func (c *Comparison) OK() bool { return c.Ceiling.OK() && c.Target.OK() }

// WriteText writes both runs and the ratio for a person to read.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\n== ceiling: the same load against the bench's built-in endpoint (no engine, no log, same process) ==")
	c.Ceiling.WriteText(w)
	fmt.Fprintf(w, "\n== target: %s ==", c.Target.Endpoint)
	c.Target.WriteText(w)
	fmt.Fprintf(w, "\nfifoq bench --ceiling: target / ceiling\n")
	fmt.Fprintf(w, "  send      %10.0f / %10.0f msgs/s = %5.1f%% of the client's ceiling\n",
		c.Target.SendRate, c.Ceiling.SendRate, 100*c.SendFraction)
	fmt.Fprintf(w, "  receive   %10.0f / %10.0f msgs/s = %5.1f%% of the client's ceiling\n",
		c.Target.ReceiveRate, c.Ceiling.ReceiveRate, 100*c.ReceiveFraction)
	cores := func(r *Result, v *float64) string {
		if v == nil || r.TotalSeconds <= 0 {
			return "   n/a"
		}
		return fmt.Sprintf("%6.2f", *v/r.TotalSeconds)
	}
	fmt.Fprintf(w, "  cpu cores client %s (ceiling phase, endpoint included) / %s (target phase); server %s\n",
		cores(c.Ceiling, c.Ceiling.Resources.ClientCPUSeconds), cores(c.Target, c.Target.Resources.ClientCPUSeconds),
		cores(c.Target, c.Target.Resources.ServerCPUSeconds))
	if f := c.Target.Resources.DiskFlushes; f != nil && c.Target.TotalSeconds > 0 {
		fmt.Fprintf(w, "  fsync     %.0f disk flushes/s on %s", *f/c.Target.TotalSeconds, c.Target.Resources.DiskDevice)
		if e := c.Target.Resources.LogEntries; e != nil {
			fmt.Fprintf(w, ", %.0f log entries/s", *e/c.Target.TotalSeconds)
		}
		fmt.Fprintln(w)
	} else if e := c.Target.Resources.LogEntries; e != nil && c.Target.TotalSeconds > 0 {
		fmt.Fprintf(w, "  fsync     %.0f log entries/s (each at most one fsync; pass --data-dir for the disk's own count)\n", *e/c.Target.TotalSeconds)
	}
	if c.OK() {
		fmt.Fprintf(w, "  result    OK\n")
	} else {
		fmt.Fprintf(w, "  result    FAILED\n")
	}
}
