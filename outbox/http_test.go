package outbox_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/outbox"
)

// TestHTTP: the key goes in the Idempotency-Key header, the topic into the
// URL path-escaped, and a non-2xx answer is an error that quotes it.
func TestHTTP(t *testing.T) {
	t.Parallel()
	var gotKey, gotPath, gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey, gotPath, gotType = r.Header.Get("Idempotency-Key"), r.URL.EscapedPath(), r.Header.Get("Content-Type")
		if strings.Contains(r.URL.Path, "full") {
			http.Error(w, "  quota exceeded\n", http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := &outbox.HTTP{URL: srv.URL + "/in/{topic}", ContentType: "application/json"}
	m := outbox.Message{Key: "sf1_k", Topic: "a/b c", Payload: []byte(`{}`)}
	if err := h.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	if gotKey != "sf1_k" || gotPath != "/in/a%2Fb%20c" || gotType != "application/json" {
		t.Fatalf("key %q path %q type %q", gotKey, gotPath, gotType)
	}
	m.Topic = "full"
	if err := h.Send(ctx, m); err == nil || !strings.Contains(err.Error(), `429 Too Many Requests: "quota exceeded"`) || !strings.Contains(err.Error(), "sf1_k") {
		t.Fatalf("429: %v", err)
	}
	if err := (&outbox.HTTP{URL: "://nowhere"}).Send(ctx, m); err == nil || !strings.Contains(err.Error(), "bad URL") {
		t.Fatalf("bad URL: %v", err)
	}
}
