package outbox_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/sqlfence/sqlfence/outbox"
)

// TestErrorCodes: the outbox's and the relay's errors carry a rule code.
func TestErrorCodes(t *testing.T) {
	code := regexp.MustCompile(`^outbox \[SF6\d\d\]: `)
	if !code.MatchString(outbox.ErrKeyReused.Error()) {
		t.Errorf("ErrKeyReused: %q", outbox.ErrKeyReused)
	}
	if _, err := outbox.New("a.b.c"); err == nil || !code.MatchString(err.Error()) {
		t.Errorf("New of a bad table: %v", err)
	}
	if _, err := (&outbox.Relay{}).Drain(context.Background()); err == nil || !code.MatchString(err.Error()) {
		t.Errorf("a Relay without DB: %v", err)
	}
	// A receiver that does not answer: the relay's delivery failed.
	h := &outbox.HTTP{URL: "http://127.0.0.1:1/{topic}"}
	if err := h.Send(context.Background(), outbox.Message{Key: "k", Topic: "t"}); err == nil || !regexp.MustCompile(`^outbox \[SF621\]: POST`).MatchString(err.Error()) {
		t.Errorf("Send to a closed port: %v", err)
	}
}
