package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// RedrivePolicy is the parsed RedrivePolicy queue attribute.
type RedrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

// RedriveAllowPolicy is the parsed RedriveAllowPolicy queue attribute.
type RedriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"` // allowAll, denyAll or byQueue
	SourceQueueArns   []string `json:"sourceQueueArns,omitempty"`
}

// The values of RedriveAllowPolicy's redrivePermission.
const (
	RedriveAllowAll = "allowAll"
	RedriveDenyAll  = "denyAll"
	RedriveByQueue  = "byQueue"
)

// ParseRedrivePolicy parses and validates a RedrivePolicy attribute value:
// a JSON object with exactly the members deadLetterTargetArn (an SQS queue
// ARN) and maxReceiveCount (1 to 1000, as a JSON number or a string of
// digits, both of which SQS accepts). Whether the target exists and is of
// the right queue type is the engine's to check.
//
// A value that is not a JSON object is InvalidAttributeValue; a JSON object
// that breaks a rule is InvalidParameterValue quoting the value, as SQS
// answers.
func ParseRedrivePolicy(s string) (RedrivePolicy, error) {
	fields, ok := jsonObject(s)
	if !ok {
		return RedrivePolicy{}, ErrInvalidAttributeValue("Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map.")
	}
	invalid := func(reason string, args ...any) error {
		return ErrInvalidParameterValue("Value %s for parameter RedrivePolicy is invalid. Reason: %s", s, fmtReason(reason, args...))
	}
	countRaw, ok := fields["maxReceiveCount"]
	if !ok {
		return RedrivePolicy{}, invalid("Redrive policy does not contain mandatory attribute: maxReceiveCount.")
	}
	arnRaw, ok := fields["deadLetterTargetArn"]
	if !ok {
		return RedrivePolicy{}, invalid("Redrive policy does not contain mandatory attribute: deadLetterTargetArn.")
	}
	if len(fields) != 2 {
		return RedrivePolicy{}, invalid("Only following attributes are supported: [maxReceiveCount, deadLetterTargetArn].")
	}
	count, text := jsonInt(countRaw)
	if count < 1 || count > MaxMaxReceiveCount {
		return RedrivePolicy{}, invalid("Invalid value for maxReceiveCount: %s, valid values are from 1 to %d both inclusive.", text, MaxMaxReceiveCount)
	}
	var arn string
	if json.Unmarshal(arnRaw, &arn) != nil {
		return RedrivePolicy{}, invalid("Invalid value for deadLetterTargetArn.")
	}
	if _, _, ok := ParseQueueARN(arn); !ok {
		if validARN(arn) {
			return RedrivePolicy{}, invalid("Only SQS queues are valid resources for deadLetterTargetArn.")
		}
		return RedrivePolicy{}, invalid("Invalid value for deadLetterTargetArn.")
	}
	return RedrivePolicy{DeadLetterTargetArn: arn, MaxReceiveCount: count}, nil
}

// ParseRedriveAllowPolicy parses and validates a RedriveAllowPolicy attribute
// value: a JSON object with redrivePermission (allowAll, denyAll or byQueue)
// and, for byQueue only, sourceQueueArns (1 to 10 SQS queue ARNs).
//
// A value of the wrong shape is InvalidAttributeValue ("unsupported
// format"); a well-formed value that breaks a rule is InvalidParameterValue
// quoting the value, as SQS answers.
func ParseRedriveAllowPolicy(s string) (RedriveAllowPolicy, error) {
	unsupported := ErrInvalidAttributeValue("Invalid value for the parameter RedriveAllowPolicy. Reason: Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format.")
	invalid := func(reason string, args ...any) error {
		return ErrInvalidParameterValue("Value %s for parameter RedriveAllowPolicy is invalid. Reason: Amazon SQS can't create the redrive allow policy. %s", s, fmtReason(reason, args...))
	}
	fields, ok := jsonObject(s)
	if !ok {
		return RedriveAllowPolicy{}, unsupported
	}
	var p RedriveAllowPolicy
	for key, raw := range fields {
		switch key {
		case "redrivePermission":
			if json.Unmarshal(raw, &p.RedrivePermission) != nil {
				return RedriveAllowPolicy{}, unsupported
			}
		case "sourceQueueArns":
			if json.Unmarshal(raw, &p.SourceQueueArns) != nil {
				return RedriveAllowPolicy{}, unsupported
			}
		default:
			return RedriveAllowPolicy{}, unsupported
		}
	}
	switch p.RedrivePermission {
	case RedriveAllowAll, RedriveDenyAll:
		if len(p.SourceQueueArns) > 0 {
			return RedriveAllowPolicy{}, invalid("To specify one or more source queue ARNs, you must set redrivePermission to byQueue.")
		}
		p.SourceQueueArns = nil
	case RedriveByQueue:
		if len(p.SourceQueueArns) == 0 {
			return RedriveAllowPolicy{}, invalid("When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.")
		}
		if len(p.SourceQueueArns) > MaxRedriveAllowSourceQueues {
			return RedriveAllowPolicy{}, invalid("The maximum number of source queue ARNs you can specify is %d.", MaxRedriveAllowSourceQueues)
		}
		for _, arn := range p.SourceQueueArns {
			if _, _, ok := ParseQueueARN(arn); !ok {
				return RedriveAllowPolicy{}, unsupported
			}
		}
	default:
		return RedriveAllowPolicy{}, unsupported
	}
	return p, nil
}

// jsonObject decodes s as one JSON object and returns its members
// undecoded; ok is false for anything else (arrays, scalars, null, garbage).
func jsonObject(s string) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// jsonInt reads an integer given as a JSON number or as a JSON string of
// decimal digits (with an optional minus sign). It returns the value, or 0
// for anything else, and the text to quote in an error message.
func jsonInt(raw json.RawMessage) (int, string) {
	text := string(bytes.TrimSpace(raw))
	var str string
	if json.Unmarshal(raw, &str) == nil {
		text = str
	}
	digits := text
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" || !isASCIIDigits(digits) {
		return 0, text
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, text
	}
	return n, text
}

// fmtReason formats a reason with its arguments, if any.
func fmtReason(reason string, args ...any) string {
	if len(args) == 0 {
		return reason
	}
	return fmt.Sprintf(reason, args...)
}
