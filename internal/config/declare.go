package config

import (
	"fmt"
	"maps"

	"github.com/fifoq/fifoq/internal/api"
)

// Declare returns a File that declares queues given as Go values rather
// than read from YAML (an embedded server's queues), checked as Load
// checks the entries of a file's queues: section and their links with the
// default account and region. name stands for the file in errors, whose
// Line is 0; the queues are copied, so the caller may reuse them.
func Declare(name string, queues []Queue) (*File, error) {
	f := &File{Path: name, settings: map[string]value{}}
	l := &loader{parser: parser{file: name}, f: f}
	for i, q := range queues {
		q.Attributes = maps.Clone(q.Attributes)
		q.Tags = maps.Clone(q.Tags)
		if q.DeadLetter != nil {
			d := *q.DeadLetter
			q.DeadLetter = &d
		}
		q.Line, q.lines = 0, nil
		if q.Name == "" {
			return nil, &Error{File: name, Msg: fmt.Sprintf("queues[%d]: name is missing", i)}
		}
		if d := q.DeadLetter; d != nil && d.Queue == "" {
			return nil, &Error{File: name, Msg: fmt.Sprintf("queue %s: the dead-letter link names no queue", q.Name)}
		}
		if d := q.DeadLetter; d != nil && q.Attributes[api.AttrRedrivePolicy] != "" {
			return nil, &Error{File: name, Msg: fmt.Sprintf("queue %s: DeadLetter and the RedrivePolicy attribute both give the dead-letter queue; keep one", q.Name)}
		}
		if d := q.DeadLetter; d != nil && (d.MaxReceiveCount < 1 || d.MaxReceiveCount > api.MaxMaxReceiveCount) {
			return nil, &Error{File: name, Msg: fmt.Sprintf("queue %s: the dead-letter link's MaxReceiveCount %d is out of range (1 to %d)", q.Name, d.MaxReceiveCount, api.MaxMaxReceiveCount)}
		}
		if err := l.checkQueue(&q); err != nil {
			return nil, err
		}
		f.Queues = append(f.Queues, q)
	}
	if _, err := f.plan(placeholderAccount, placeholderRegion); err != nil {
		return nil, err
	}
	return f, nil
}
