package fifoqtest

import (
	"log/slog"
	"time"
)

// Option configures a Server started by New or Start.
type Option func(*options)

type options struct {
	queues        []Queue
	account       string
	region        string
	keyID, secret string
	recreateDelay *time.Duration
	purgeDelay    *time.Duration
	dataDir       string
	clock         *Clock
	logger        *slog.Logger
}

// Queue is a queue to declare when the server starts, before New returns.
// Its fields are those of an entry of the queues: list of fifoq's config
// file (fifoq serve --config), and it is checked and declared the same
// way: a name ending in .fifo needs the FifoQueue attribute, dead-letter
// queues are created before the queues that name them, and a mistake fails
// the test before it begins.
type Queue struct {
	// Name is the queue's name; a FIFO queue's ends in .fifo.
	Name string
	// Account owns the queue; empty for the server's account.
	Account string
	// Attributes are CreateQueue's attributes, as SQS strings:
	// "FifoQueue": "true", "VisibilityTimeout": "30", and so on.
	Attributes map[string]string
	// Tags are the queue's tags.
	Tags map[string]string
	// DeadLetter, if set, becomes the queue's RedrivePolicy.
	DeadLetter *DeadLetter
	// Policy is the queue's access policy, a JSON document (the Policy
	// attribute), or empty.
	Policy string
}

// DeadLetter links a queue to its dead-letter queue, in the same account.
type DeadLetter struct {
	// Queue is the dead-letter queue's name; a FIFO queue's must be a FIFO
	// queue too.
	Queue string
	// MaxReceiveCount is how many times a message is received before the
	// next receive moves it to the dead-letter queue (1 to 1000).
	MaxReceiveCount int
}

// WithQueues declares queues when the server starts.
func WithQueues(queues ...Queue) Option {
	return func(o *options) { o.queues = append(o.queues, queues...) }
}

// WithAccount sets the server's account id (12 digits; default
// 000000000000): the account of the queues and of callers whose
// credentials name no other.
func WithAccount(id string) Option {
	return func(o *options) { o.account = id }
}

// WithRegion sets the server's own region (fifoq serve --region) and the
// region of the SDK configuration (default us-east-1).
func WithRegion(region string) Option {
	return func(o *options) { o.region = region }
}

// WithCredentials makes the server require requests signed (SigV4) with
// this access key, as fifoq serve --credentials does; Config and Client
// sign with it. Without it the server accepts any signature, and Config
// signs with a placeholder key.
func WithCredentials(accessKeyID, secretAccessKey string) Option {
	return func(o *options) { o.keyID, o.secret = accessKeyID, secretAccessKey }
}

// WithRecreateDelay sets how long after DeleteQueue a queue of the same
// name cannot be created (QueueDeletedRecently). The default is SQS's 60
// seconds, measured on the server's clock; 0 turns the rule off.
func WithRecreateDelay(d time.Duration) Option {
	return func(o *options) { o.recreateDelay = &d }
}

// WithPurgeDelay sets how long after PurgeQueue the queue cannot be purged
// again (PurgeQueueInProgress). The default is SQS's 60 seconds, measured
// on the server's clock; 0 turns the rule off.
func WithPurgeDelay(d time.Duration) Option {
	return func(o *options) { o.purgeDelay = &d }
}

// WithDataDir keeps the server's state in dir, on the durable log fifoq
// serve uses by default, instead of in memory: a server started again on
// the same directory finds the queues and messages the last one left.
// Only one server at a time may use a directory.
func WithDataDir(dir string) Option {
	return func(o *options) { o.dataDir = dir }
}

// WithClock runs the server on a fake clock that the test advances; see
// Clock.
func WithClock(c *Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithLogger sends the server's log lines to l. By default New sends
// warnings and errors to the test's log, and Start discards them.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}
