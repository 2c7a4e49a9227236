// Package historycheck checks what clients saw of a FIFO queue against
// the queue's guarantees. The failover test (internal/clustertest) and the
// crash test (internal/crashtest) both record their clients' operations
// here and check them with Check; it is ordinary code so that its unit
// tests can feed it made-up histories.
//
// A test records a history as Op records in a History, one per logical
// operation (every attempt of one request, retried with the same ids):
// Send, Receive, Delete or Release (ChangeMessageVisibility 0), with the
// time it was first invoked, the time its definitive answer came back,
// its Outcome (OK, Refused, or Unknown when no definitive answer came) and
// its messages (Msg: group, deduplication id, place in the group, and
// once known MessageId and receipt handle); a receive also records the
// visibility timeout it asked for. Every message has a deduplication id of
// its own, each group one producer sending in order, and the history ends
// with a drain: every message left in the queue received and deleted.
//
// Check then looks for each violation with a function of its own (see
// Check): lost messages, undone deletes, duplicates inside the
// deduplication interval, broken group order, groups held by two receives
// at once, and, with porcupine against a model of one FIFO group
// (model.go), each group's history that has no linearization.
package historycheck
