package engine

import (
	"github.com/fifoq/fifoq/internal/api"
)

func (e *Engine) deleteMessage(cmd *Command, r *api.DeleteMessageRequest, now int64) (api.Response, error) {
	q, err := e.queueFor(cmd, now)
	if err != nil {
		return nil, err
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
//   - the handle of the message's current receive deletes it, except that
//     a FIFO queue refuses a handle whose visibility timeout ran out
//     (ReceiptHandleIsInvalid, "The receipt handle has expired");
//   - an older handle, while the message was received again since, is
//     refused by a FIFO queue and succeeds without deleting in a standard
//     queue.
func (e *Engine) deleteOne(q *queue, handle string) error {
	m, nonce, err := q.lookup(handle)
	if err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	if m.nonce != nonce {
		if q.fifo {
			return errHandleExpired(handle)
		}
		return nil
	}
	if q.fifo && m.state != stateInflight {
		return errHandleExpired(handle)
	}
	atLimit := q.nInflight >= api.MaxInflightStandard
	q.remove(m)
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
// the in-flight message a receipt handle names; 0 makes it visible at once.
// Only the handle of the current receive of an in-flight message works
// (anything else is MessageNotInflight, in both queue types), and the
// message may not stay invisible longer than MaxVisibilityTimeout after
// that receive.
func (e *Engine) changeVisibilityOne(q *queue, handle string, timeout *int, now int64) error {
	if timeout == nil {
		return api.ErrMissingParameter("VisibilityTimeout")
	}
	m, nonce, err := q.lookup(handle)
	if err != nil {
		return err
	}
	if m == nil || m.nonce != nonce || m.state != stateInflight {
		return api.ErrMessageNotInflight()
	}
	vis := *timeout
	until := now + int64(vis)*1e9
	if until > m.receivedAt+int64(api.MaxVisibilityTimeout)*1e9 {
		return api.ErrInvalidParameterValue("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [%d seconds]", vis, api.MaxVisibilityTimeout)
	}
	m.vizChanges++
	if vis == 0 {
		q.makeVisible(m)
		e.wake(q.key)
		return nil
	}
	q.setVisibility(m, until)
	return nil
}
