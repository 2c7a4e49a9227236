// Package config reads fifoq's configuration file (fifoq serve --config
// fifoq.yaml): the server's settings and the queues to declare at start.
//
// Load parses the YAML file into yaml.Node trees first, so that every
// problem — a syntax error, an unknown key, a value of the wrong type, an
// invalid queue attribute, a dead-letter queue of the wrong type — is
// reported as FILE:LINE: what is wrong. Queue names, attributes, tags and
// policies are checked with the same validators the SQS API uses (package
// api and auth), so a file that loads does not fail later for a reason
// that could have been seen in it.
//
// Resolve merges the settings by precedence: a flag set on the command
// line, else its FIFOQ_ environment variable, else the file, else the
// flag's default. Settings lists the three spellings of every setting.
//
// Apply declares the file's queues on a running server through its typed
// request interface (Doer, which *server.Server implements), so the queues
// obey the same validation and rules as an SQS client's requests. It is
// idempotent: a queue that is missing is created, a queue whose declared
// attributes or tags differ is brought to the file's values, and a queue
// that already matches is not written to. Attributes and tags the file does
// not mention are left as they are, and no queue is ever deleted.
package config
