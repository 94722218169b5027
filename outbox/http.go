// HTTP delivery: each message POSTed with its key in the Idempotency-Key header.
package outbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// KeyHeader is the header HTTP puts the effect key in: the name payment and
// other APIs read to deduplicate a repeated request.
const KeyHeader = "Idempotency-Key"

// HTTP delivers messages as POST requests, for Relay.Send.
type HTTP struct {
	// URL receives every message. "{topic}" in it is replaced by the
	// message's topic, path-escaped, to route topics to endpoints.
	URL string
	// ContentType of the payload; default application/octet-stream.
	ContentType string
	// Client sends the requests; default http.DefaultClient. The relay's
	// SendTimeout bounds each request through its context.
	Client *http.Client
}

// Send POSTs m's payload with m.Key in the Idempotency-Key header. A 2xx
// response is delivery; anything else, or no response, is a failure the
// relay retries. A receiver that answers 2xx without deduplicating by the
// key applies a redelivered message twice.
func (h *HTTP) Send(ctx context.Context, m Message) error {
	target := strings.ReplaceAll(h.URL, "{topic}", url.PathEscape(m.Topic))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(m.Payload))
	if err != nil {
		return fmt.Errorf("outbox [SF621]: message %s (topic %q): bad URL %q: %w", m.Key, m.Topic, target, err)
	}
	ct := h.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set(KeyHeader, m.Key)
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("outbox [SF621]: POST %s for message %s: %w", target, m.Key, err)
	}
	defer resp.Body.Close()
	// A short read of the body, for the error, and the rest drained (a
	// bounded amount) so the connection can be reused.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("outbox [SF621]: POST %s for message %s: %s: %q", target, m.Key, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
