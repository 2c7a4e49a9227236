package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

const dlqARN = "arn:aws:sqs:us-east-1:123456789012:MyDLQ"

func TestParseRedrivePolicy(t *testing.T) {
	tests := []struct {
		name, s   string
		want      RedrivePolicy
		code, msg string
	}{
		{"number", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":5}`, RedrivePolicy{dlqARN, 5}, "", ""},
		{"string count", `{"maxReceiveCount":"1000", "deadLetterTargetArn":"` + dlqARN + `"}`, RedrivePolicy{dlqARN, 1000}, "", ""},
		{"whitespace", " {\n\"deadLetterTargetArn\" : \"" + dlqARN + "\" , \"maxReceiveCount\" : 1 } ", RedrivePolicy{dlqARN, 1}, "", ""},
		{"fifo target", `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:1:d.fifo","maxReceiveCount":2}`, RedrivePolicy{"arn:aws:sqs:eu-west-1:1:d.fifo", 2}, "", ""},
		{"blank", " ", RedrivePolicy{}, "InvalidAttributeValue", "Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map."},
		{"empty", "", RedrivePolicy{}, "InvalidAttributeValue", "not a valid JSON map"},
		{"number value", "4", RedrivePolicy{}, "InvalidAttributeValue", "not a valid JSON map"},
		{"array", "[]", RedrivePolicy{}, "InvalidAttributeValue", "not a valid JSON map"},
		{"null", "null", RedrivePolicy{}, "InvalidAttributeValue", "not a valid JSON map"},
		{"truncated", `{"maxReceiveCount":5`, RedrivePolicy{}, "InvalidAttributeValue", "not a valid JSON map"},
		{"missing count", "{}", RedrivePolicy{}, "InvalidParameterValue",
			"Value {} for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: maxReceiveCount."},
		{"capitalised keys", `{"MaxReceiveCount":"4","DeadLetterTargetArn":"` + dlqARN + `"}`, RedrivePolicy{}, "InvalidParameterValue",
			"does not contain mandatory attribute: maxReceiveCount."},
		{"missing target", `{"maxReceiveCount":5}`, RedrivePolicy{}, "InvalidParameterValue",
			`Value {"maxReceiveCount":5} for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: deadLetterTargetArn.`},
		{"unknown key", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":5,"dummyField":"dummy value"}`, RedrivePolicy{}, "InvalidParameterValue",
			"Reason: Only following attributes are supported: [maxReceiveCount, deadLetterTargetArn]."},
		{"count 0", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":0}`, RedrivePolicy{}, "InvalidParameterValue",
			"Reason: Invalid value for maxReceiveCount: 0, valid values are from 1 to 1000 both inclusive."},
		{"count -36", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":-36}`, RedrivePolicy{}, "InvalidParameterValue",
			`Value {"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":-36} for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: -36, valid values are from 1 to 1000 both inclusive.`},
		{"count 4023", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":4023}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for maxReceiveCount: 4023,"},
		{"count string 1001", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1001"}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for maxReceiveCount: 1001,"},
		{"count fraction", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":2.5}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for maxReceiveCount: 2.5,"},
		{"count word", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"five"}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for maxReceiveCount: five,"},
		{"count spaced string", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":" 5"}`, RedrivePolicy{}, "InvalidParameterValue", "maxReceiveCount"},
		{"count bool", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":true}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for maxReceiveCount: true,"},
		{"count huge", `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":99999999999999999999999}`, RedrivePolicy{}, "InvalidParameterValue", "maxReceiveCount"},
		{"target not an arn", `{"deadLetterTargetArn": "dummy", "maxReceiveCount": 42}`, RedrivePolicy{}, "InvalidParameterValue",
			`Value {"deadLetterTargetArn": "dummy", "maxReceiveCount": 42} for parameter RedrivePolicy is invalid. Reason: Invalid value for deadLetterTargetArn.`},
		{"target of another service", `{"deadLetterTargetArn":"arn:aws:sns:us-east-1:123456789012:MyTopic","maxReceiveCount":5}`, RedrivePolicy{}, "InvalidParameterValue",
			"Reason: Only SQS queues are valid resources for deadLetterTargetArn."},
		{"target not a string", `{"deadLetterTargetArn":7,"maxReceiveCount":5}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for deadLetterTargetArn."},
		{"target empty", `{"deadLetterTargetArn":"","maxReceiveCount":5}`, RedrivePolicy{}, "InvalidParameterValue", "Invalid value for deadLetterTargetArn."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRedrivePolicy(tt.s)
			checkErr(t, err, tt.code, tt.msg)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseRedriveAllowPolicy(t *testing.T) {
	arns := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("arn:aws:sqs:us-east-1:123456789012:x%d", i+1)
		}
		return out
	}
	doc := func(p string, sources []string) string {
		b, _ := json.Marshal(map[string]any{"redrivePermission": p, "sourceQueueArns": sources})
		return string(b)
	}
	const unsupported = "Invalid value for the parameter RedriveAllowPolicy. Reason: Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format."
	tests := []struct {
		name, s   string
		want      RedriveAllowPolicy
		code, msg string
	}{
		{"allowAll", `{"redrivePermission":"allowAll"}`, RedriveAllowPolicy{RedrivePermission: "allowAll"}, "", ""},
		{"denyAll", `{"redrivePermission":"denyAll"}`, RedriveAllowPolicy{RedrivePermission: "denyAll"}, "", ""},
		{"allowAll with no sources", `{"redrivePermission":"allowAll","sourceQueueArns":[]}`, RedriveAllowPolicy{RedrivePermission: "allowAll"}, "", ""},
		{"byQueue", doc("byQueue", arns(3)), RedriveAllowPolicy{"byQueue", arns(3)}, "", ""},
		{"byQueue of 10", doc("byQueue", arns(10)), RedriveAllowPolicy{"byQueue", arns(10)}, "", ""},
		{"not json", "badjson", RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"number", "444", RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"array", "[]", RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"no permission", "{}", RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"unknown permission", `{"redrivePermission":"dummy"}`, RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"permission not a string", `{"redrivePermission":5}`, RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"permission case", `{"redrivePermission":"ALLOWALL"}`, RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"unknown key", `{"redrivePermission":"allowAll","dummy":"value"}`, RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"sources as string", `{"redrivePermission":"byQueue","sourceQueueArns":"arn:aws:sqs"}`, RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"sources of objects", `{"redrivePermission":"byQueue","sourceQueueArns":[{"dummy":"value"}]}`, RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"source not a queue arn", doc("byQueue", []string{"arn:aws:sns:us-east-1:1:t"}), RedriveAllowPolicy{}, "InvalidAttributeValue", unsupported},
		{"byQueue without sources", `{"redrivePermission":"byQueue"}`, RedriveAllowPolicy{}, "InvalidParameterValue",
			`Value {"redrivePermission":"byQueue"} for parameter RedriveAllowPolicy is invalid. Reason: Amazon SQS can't create the redrive allow policy. When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.`},
		{"byQueue with empty sources", `{"redrivePermission":"byQueue","sourceQueueArns":[]}`, RedriveAllowPolicy{}, "InvalidParameterValue", "you must also specify one or more sourceQueueArns values."},
		{"byQueue of 11", doc("byQueue", arns(11)), RedriveAllowPolicy{}, "InvalidParameterValue",
			"Reason: Amazon SQS can't create the redrive allow policy. The maximum number of source queue ARNs you can specify is 10."},
		{"allowAll with sources", doc("allowAll", arns(1)), RedriveAllowPolicy{}, "InvalidParameterValue",
			"Reason: Amazon SQS can't create the redrive allow policy. To specify one or more source queue ARNs, you must set redrivePermission to byQueue."},
		{"denyAll with sources", doc("denyAll", arns(1)), RedriveAllowPolicy{}, "InvalidParameterValue", "you must set redrivePermission to byQueue."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRedriveAllowPolicy(tt.s)
			checkErr(t, err, tt.code, tt.msg)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseRedrivePolicy(f *testing.F) {
	f.Add(`{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":5}`)
	f.Add(`{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"10"}`)
	f.Add(`{"maxReceiveCount":-1}`)
	f.Add(`{}`)
	f.Add(`[1]`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseRedrivePolicy(s)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not an *api.Error", err)
			}
			return
		}
		if p.MaxReceiveCount < 1 || p.MaxReceiveCount > MaxMaxReceiveCount {
			t.Fatalf("accepted maxReceiveCount %d", p.MaxReceiveCount)
		}
		if _, _, ok := ParseQueueARN(p.DeadLetterTargetArn); !ok {
			t.Fatalf("accepted target %q", p.DeadLetterTargetArn)
		}
		// What was accepted survives a round trip through its canonical form.
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRedrivePolicy(string(b))
		if err != nil || again != p {
			t.Fatalf("round trip of %s: %+v, %v", b, again, err)
		}
	})
}
