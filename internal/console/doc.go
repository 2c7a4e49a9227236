// Package console is fifoq's web console: an operator's view of the queues
// of one account, served under /console/ by the same binary that serves the
// SQS API, with its assets (plain HTML, CSS and JavaScript, no build step)
// embedded.
//
// The console shows the queues with their depths and a live throughput
// chart, a queue's attributes, its message groups and who holds them, and
// its messages without receiving them (peek); it sends test messages,
// purges queues, and starts and cancels dead-letter redrives (message move
// tasks). It acts through a Backend, which the server implements: every
// SQS action goes through the same validation and queue-policy checks as
// the wire API, and the introspection the API lacks (groups, peek) only
// reads the engine.
//
// Its JSON API lives under /console/api/. When the server has credentials,
// an operator signs in with an access key id and secret key and gets a
// signed session cookie; the console then acts as that key's account.
// Without credentials (loopback mode), the console acts as the default
// account without sign-in. Every state-changing call needs a CSRF token
// (header X-CSRF-Token) bound to the session.
package console
