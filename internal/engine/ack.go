package engine

import (
	"math"

	"github.com/fifoq/fifoq/internal/api"
)

func (e *Engine) deleteMessage(cmd *Command, r *api.DeleteMessageRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	if !q.ownsHandle(r.ReceiptHandle) {
		return nil, errQueueMoving() // another partition's group (split.go)
	}
	if err := e.deleteOne(q, r.ReceiptHandle); err != nil {
		return nil, err
	}
	return api.Empty{}, nil
}

func (e *Engine) deleteMessageBatch(cmd *Command, r *api.DeleteMessageBatchRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	for i := range r.Entries {
		if !q.ownsHandle(r.Entries[i].ReceiptHandle) {
			return nil, errQueueMoving() // another partition's group (split.go)
		}
	}
	res := &api.DeleteMessageBatchResult{Successful: []api.BatchResultEntry{}, Failed: []api.BatchResultErrorEntry{}}
	for i, en := range r.Entries {
		err := api.ValidateDeleteMessageBatchEntry(&r.Entries[i])
		if err == nil {
			err = e.deleteOne(q, en.ReceiptHandle)
		}
		if err != nil {
			res.Failed = append(res.Failed, api.BatchError(en.Id, api.AsError(err)))
			continue
		}
		res.Successful = append(res.Successful, api.BatchResultEntry{Id: en.Id})
	}
	return res, nil
}

// deleteOne deletes the message a receipt handle names:
//
//   - a handle of a message that no longer exists succeeds (deletion is
//     idempotent);
//   - the handle of the message's latest receive deletes it, in a standard
//     queue even after its visibility timeout ran out (LocalStack's
//     test_delete_after_visibility_timeout), while a FIFO queue refuses a
//     handle whose visibility timeout ran out or was ended
//     (InvalidParameterValue, "The receipt handle has expired":
//     test_fifo_delete_after_visibility_timeout);
//   - an older handle, while the message was received again since, is
//     refused by a FIFO queue in the same way, and deletes the message in a
//     standard queue: moto's tests verified against AWS (pull request
//     #4655, "it is possible to change message visibility or delete a
//     message using them") found that old handles of a standard queue
//     still work, which the DeleteMessage documentation allows ("the
//     message might not be deleted").
func (e *Engine) deleteOne(q *queue, handle string) error {
	m, nonce, err := q.lookup(handle)
	if err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	if q.fifo && (q.ms.nonce(m) != nonce || m.state != stateInflight) {
		return errHandleExpired(handle)
	}
	atLimit := q.nInflight >= api.MaxInflightStandard
	q.remove(m)
	e.dropBody(m)
	// Deleting a FIFO message may unblock its group; at the in-flight limit
	// any deletion makes room for a receive.
	if q.fifo || atLimit {
		e.wake(q.key)
	}
	return nil
}

func (e *Engine) changeMessageVisibility(cmd *Command, r *api.ChangeMessageVisibilityRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	if !q.ownsHandle(r.ReceiptHandle) {
		return nil, errQueueMoving() // another partition's group (split.go)
	}
	if err := e.changeVisibilityOne(q, r.ReceiptHandle, r.VisibilityTimeout, now); err != nil {
		return nil, err
	}
	return api.Empty{}, nil
}

func (e *Engine) changeMessageVisibilityBatch(cmd *Command, r *api.ChangeMessageVisibilityBatchRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
	}
	for i := range r.Entries {
		if !q.ownsHandle(r.Entries[i].ReceiptHandle) {
			return nil, errQueueMoving() // another partition's group (split.go)
		}
	}
	res := &api.ChangeMessageVisibilityBatchResult{Successful: []api.BatchResultEntry{}, Failed: []api.BatchResultErrorEntry{}}
	for i, en := range r.Entries {
		err := api.ValidateChangeMessageVisibilityBatchEntry(&r.Entries[i])
		if err == nil {
			err = e.changeVisibilityOne(q, en.ReceiptHandle, en.VisibilityTimeout, now)
		}
		if err != nil {
			res.Failed = append(res.Failed, api.BatchError(en.Id, api.AsError(err)))
			continue
		}
		res.Successful = append(res.Successful, api.BatchResultEntry{Id: en.Id})
	}
	return res, nil
}

// changeVisibilityOne sets a new visibility timeout, counted from now, for
// the message a receipt handle names; 0 makes it visible at once (and
// unblocks its FIFO group). The message may not stay invisible longer than
// MaxVisibilityTimeout after its latest receive. Which handles work:
//
//   - a handle of a message that no longer exists is InvalidParameterValue,
//     "Message does not exist or is not available for visibility timeout
//     change." (LocalStack's AWS-validated
//     test_change_visibility_on_deleted_message_raises_invalid_parameter_value);
//   - in a standard queue any handle of the message works, after its
//     visibility timeout ran out too (test_change_message_visibility_after_visibility_timeout_expiration,
//     recorded 200), and so does a handle of an earlier receive
//     (test_terminate_visibility_timeout_after_receive); a visible message
//     given a timeout is in flight again, under its latest receive;
//   - in a FIFO queue only the handle of the latest receive of a message in
//     flight works; any other is refused as expired. No recording shows
//     this case: the answer is DeleteMessage's recorded one for the same
//     handle.
func (e *Engine) changeVisibilityOne(q *queue, handle string, timeout *int, now int64) error {
	if timeout == nil {
		return api.ErrMissingParameter("VisibilityTimeout")
	}
	m, nonce, err := q.lookup(handle)
	if err != nil {
		return err
	}
	if m == nil || m.state == stateDelayed || q.ms.receives(m) == 0 {
		return errNotAvailable(handle)
	}
	if q.fifo && (q.ms.nonce(m) != nonce || m.state != stateInflight) {
		return errHandleExpired(handle)
	}
	vis := *timeout
	until := now + int64(vis)*1e9
	if until > q.ms.receivedAt(m)+int64(api.MaxVisibilityTimeout)*1e9 {
		return api.ErrInvalidParameterValue("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [%d seconds]", vis, api.MaxVisibilityTimeout)
	}
	q.cow.touch(m)
	if m.vizChanges < math.MaxInt16 {
		m.vizChanges++
	}
	switch {
	case m.state == stateVisible && vis > 0:
		q.hide(m, until)
	case m.state == stateVisible:
		// Already visible: nothing to end.
	case vis == 0:
		q.makeVisible(m, now)
		e.wake(q.key)
	default:
		q.setVisibility(m, until)
	}
	return nil
}
