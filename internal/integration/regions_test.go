package integration

import (
	"strings"
	"testing"

	sqsv2 "github.com/aws/aws-sdk-go-v2/service/sqs"
	defaultsv1 "github.com/aws/aws-sdk-go/aws/defaults"
	sessionv1 "github.com/aws/aws-sdk-go/aws/session"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"
)

// inRegion returns a client like c of env that signs for another region,
// as an application configured for that region does.
func inRegion(env *Env, c Client, region string) Client {
	if c.Proto() == "json" {
		return v2Client{sqsv2.New(env.V2.Options(), func(o *sqsv2.Options) { o.Region = region })}
	}
	cfg := env.V1.Client.Config.Copy().WithRegion(region)
	return v1Client{sqsv1.New(&sessionv1.Session{Config: cfg, Handlers: defaultsv1.Handlers()})}
}

// TestQueueRegions checks that a queue lives in the region its creator
// signed for, as in SQS: the same name created through two regions is two
// queues, with URLs and ARNs that tell them apart, listed each in its own
// region, and a message sent to one is not in the other. These are the
// expectations of LocalStack's multi-region tests
// (tests/aws/services/sqs/test_sqs.py: test_endpoint_strategy_with_multi_region,
// test_list_queues_multi_region_with_endpoint_strategy_standard,
// test_get_queue_url_multi_region), with fifoq's URL for a queue outside
// the server's region: LocalStack's path form /queue/REGION/ACCOUNT/NAME.
func TestQueueRegions(t *testing.T) {
	eachProtocol(t, func(t *testing.T, env *Env, home Client) {
		ctx := ctxT(t)
		west, north := inRegion(env, home, "us-west-1"), inRegion(env, home, "eu-north-1")
		const name = "orders"
		homeURL := mustCreate(t, home, name, nil)
		westURL := mustCreate(t, west, name, nil)
		northURL := mustCreate(t, north, name, nil)
		if homeURL != env.URL+"/"+Account+"/"+name {
			t.Errorf("home region queue URL %s, want SQS's form", homeURL)
		}
		if want := env.URL + "/queue/us-west-1/" + Account + "/" + name; westURL != want {
			t.Errorf("us-west-1 queue URL %s, want %s", westURL, want)
		}
		if !strings.Contains(northURL, "eu-north-1") || northURL == westURL {
			t.Errorf("eu-north-1 queue URL %s: not its own", northURL)
		}
		for c, want := range map[Client]string{home: homeURL, west: westURL, north: northURL} {
			if got, err := c.GetQueueURL(ctx, name); err != nil || got != want {
				t.Errorf("GetQueueUrl = %s, %v; want %s", got, err, want)
			}
			if urls, _, err := c.ListQueues(ctx, "", 0, ""); err != nil || len(urls) != 1 || urls[0] != want {
				t.Errorf("ListQueues = %v, %v; want only %s", urls, err, want)
			}
		}
		arn, err := west.GetAttrs(ctx, westURL, "QueueArn")
		if err != nil || arn["QueueArn"] != "arn:aws:sqs:us-west-1:"+Account+":"+name {
			t.Errorf("QueueArn of the us-west-1 queue: %v, %v", arn, err)
		}

		if _, err := west.Send(ctx, westURL, SendIn{Body: "foobar"}); err != nil {
			t.Fatal(err)
		}
		if msgs, err := north.Receive(ctx, northURL, RecvIn{Max: 10}); err != nil || len(msgs) != 0 {
			t.Fatalf("eu-north-1's queue received %d messages (%v), want none", len(msgs), err)
		}
		if n := numAttr(t, home, homeURL, "ApproximateNumberOfMessages"); n != 0 {
			t.Fatalf("the home region's queue holds %d messages, want none", n)
		}
		// A URL that names its region names that queue, whatever region
		// the client signs for.
		wantBodies(t, mustReceive(t, home, westURL, 10), "foobar")

		// A dead-letter queue is in its source's region.
		homeDLQ, err := home.GetAttrs(ctx, homeURL, "QueueArn")
		if err != nil {
			t.Fatal(err)
		}
		_, err = west.CreateQueue(ctx, "with-dlq", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"` + homeDLQ["QueueArn"] + `","maxReceiveCount":"3"}`,
		}, nil)
		wantErr(t, err, "InvalidParameterValue")

		// Deleting one leaves the others.
		ok(t, west.DeleteQueue(ctx, westURL))
		if _, err := north.GetAttrs(ctx, northURL, "QueueArn"); err != nil {
			t.Fatalf("eu-north-1's queue after deleting us-west-1's: %v", err)
		}
		if _, err := home.GetQueueURL(ctx, name); err != nil {
			t.Fatalf("the home region's queue after deleting us-west-1's: %v", err)
		}
	})
}

// TestSingleRegion checks --single-region: every request acts on the
// queues of the server's region, whatever region it is signed for or its
// queue URL names, as ElasticMQ serves them (its README's clients sign for
// the region "elasticmq").
func TestSingleRegion(t *testing.T) {
	t.Parallel()
	env := StartWith(t, Options{SingleRegion: true})
	for _, home := range []Client{v2Client{env.V2}, v1Client{env.V1}} {
		t.Run(home.Proto(), func(t *testing.T) {
			ctx := ctxT(t)
			other := inRegion(env, home, "elasticmq")
			name := "single-" + home.Proto()
			u := mustCreate(t, home, name, nil)
			if got, err := other.CreateQueue(ctx, name, nil, nil); err != nil || got != u {
				t.Fatalf("CreateQueue signed for another region = %s, %v; want the queue %s", got, err, u)
			}
			if _, err := other.Send(ctx, u, SendIn{Body: "one"}); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Send(ctx, env.URL+"/queue/eu-west-1/"+Account+"/"+name, SendIn{Body: "two"}); err != nil {
				t.Fatal(err)
			}
			wantBodies(t, mustReceive(t, home, u, 10), "one", "two")
			if urls, _, err := other.ListQueues(ctx, name, 0, ""); err != nil || len(urls) != 1 || urls[0] != u {
				t.Fatalf("ListQueues signed for another region = %v, %v; want %s", urls, err, u)
			}
		})
	}
}
