// Package api is fifoq's vocabulary: the typed requests and responses of the
// 23 Amazon SQS actions, the error codes SQS answers with, the limits SQS
// documents, and the validation rules that apply to a request before it
// reaches a queue.
//
// Both wire codecs decode into these types and encode from them, so an input
// is validated once, here, and both protocols reject it with the same code.
// The field names are the member names of the AWS JSON 1.0 model
// (shared/reference/sqs-2012-11-05.service.json), and the json struct tags
// are that protocol's wire names, so the JSON codec needs no mapping table.
//
// The package imports nothing of fifoq's: every other layer may depend on it.
package api
