package engine

import "github.com/fifoq/fifoq/internal/api"

// QueuePolicy returns the Policy attribute of queue q ("" if none), and
// false if q does not exist. The server's access checks read it; it changes
// nothing.
func (e *Engine) QueuePolicy(q api.QueueKey) (policy string, ok bool) {
	qu := e.queues[q]
	if qu == nil {
		return "", false
	}
	return qu.attrs.Policy, true
}

// MoveTaskSource returns the ARN of the source queue a message move task
// handle names, and false if the handle is malformed, so that the server
// can check the caller's access to that queue before CancelMessageMoveTask.
// It changes nothing.
func MoveTaskSource(handle string) (sourceArn string, ok bool) {
	return decodeTaskHandle(handle)
}
