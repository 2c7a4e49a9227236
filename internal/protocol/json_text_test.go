package protocol

import (
	"net/http/httptest"
	"testing"

	"github.com/fifoq/fifoq/internal/api"
)

// TestJSONRefusesTextThatIsNotUnicode checks that a JSON body whose strings
// do not stand for Unicode text is refused rather than stored with U+FFFD in
// place of what was sent, and that real text, escaped or not, still decodes.
func TestJSONRefusesTextThatIsNotUnicode(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // the decoded MessageBody; "" when the body must be refused
	}{
		{"invalid UTF-8", "{\"MessageBody\":\"a\xffb\"}", ""},
		{"invalid UTF-8 outside strings", "{\"MessageBody\":\"ab\"\xff}", ""},
		{"lone high surrogate", `{"MessageBody":"a\ud800b"}`, ""},
		{"lone low surrogate", `{"MessageBody":"a\udc00b"}`, ""},
		{"high surrogate at the end", `{"MessageBody":"a\ud800"}`, ""},
		{"two high surrogates", `{"MessageBody":"\ud800\ud800"}`, ""},
		{"surrogate pair", `{"MessageBody":"\ud83d\ude00"}`, "\U0001F600"},
		{"surrogate pair in upper case", `{"MessageBody":"\uD83D\uDE00"}`, "\U0001F600"},
		{"raw UTF-8", `{"MessageBody":"😀 é"}`, "😀 é"},
		{"escaped backslash before u", `{"MessageBody":"\\ud800"}`, `\ud800`},
		{"escaped quote", `{"MessageBody":"\"\ud83d\ude00"}`, "\"\U0001F600"},
		{"BMP escape", `{"MessageBody":"\u00e9"}`, "é"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", nil)
			r.Header.Set(headerTarget, targetPrefix+"SendMessage")
			_, req, err := Decode(JSON, r, []byte(tc.body))
			if tc.want == "" {
				if err == nil || err.Code != "SerializationException" || err.Status != 400 {
					t.Fatalf("got %+v, %v; want a 400 SerializationException", req, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := req.(*api.SendMessageRequest).MessageBody; got != tc.want {
				t.Fatalf("MessageBody %q, want %q", got, tc.want)
			}
		})
	}
}
