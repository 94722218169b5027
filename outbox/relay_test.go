package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/outbox"
)

// receiver is a loopback HTTP receiver that deduplicates by the
// Idempotency-Key header: it applies each key once and counts every request.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests map[string]int    // key → requests
	applied  map[string]string // key → the payload applied
	noKey    int
	fail     func(key string, n int) int // status for the n-th request of key (0: 200)
}

func newReceiver(t *testing.T, fail func(key string, n int) int) *receiver {
	r := &receiver{requests: map[string]int{}, applied: map[string]string{}, fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		key := req.Header.Get(outbox.KeyHeader)
		r.mu.Lock()
		defer r.mu.Unlock()
		if key == "" {
			r.noKey++
			http.Error(w, "no key", http.StatusBadRequest)
			return
		}
		r.requests[key]++
		if r.fail != nil {
			if code := r.fail(key, r.requests[key]); code != 0 {
				http.Error(w, "receiver says no", code)
				return
			}
		}
		if _, dup := r.applied[key]; !dup {
			r.applied[key] = req.URL.Path + " " + string(body)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[key]
}

func (r *receiver) appliedKeys() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.applied)
}

// nilDB is a handle that is never used: Relay checks its settings first.
var nilDB, _ = sql.Open("pgx", "host=/nonexistent")

// seed adds n messages through n jobs' leases, one committed transaction each.
func seed(t *testing.T, e *env, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e.exec(t, fmt.Sprintf(`INSERT INTO jobs SELECT FROM generate_series(1, %d)`, n))
	var keys []string
	for range n {
		l, err := e.jobs.ClaimNext(ctx, e.raw)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := e.fenced.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.box.Add(ctx, tx, l, "notify", "orders", []byte(fmt.Sprint("job ", l.JobID))); err != nil {
			t.Fatal(err)
		}
		if err := l.CompleteIn(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		k, _ := l.Key("notify")
		keys = append(keys, k)
		l.Stop()
	}
	return keys
}

// events counts the observer's events by kind.
type events struct {
	mu sync.Mutex
	n  map[outbox.EventKind]int
	ev []outbox.Event
}

func (c *events) observe(ev outbox.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[outbox.EventKind]int{}
	}
	c.n[ev.Kind]++
	c.ev = append(c.ev, ev)
}

func (c *events) count(k outbox.EventKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// syncBuffer is a log destination several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRelaysDeliver: three relays of two workers each share one outbox and a
// receiver that fails a third of the first requests. Every message is
// delivered and marked, every key applied once, retried ones more than once
// requested, and the log and the observer show it.
func TestRelaysDeliver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 30*time.Second)
	const n = 120
	keys := seed(t, e, n)
	rcv := newReceiver(t, func(key string, n int) int {
		if n == 1 && key[len(key)-1]%3 == 0 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	var (
		obs  events
		logs syncBuffer
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 3 {
		r := &outbox.Relay{
			DB: e.raw, Outbox: e.box, Send: (&outbox.HTTP{URL: rcv.srv.URL + "/{topic}"}).Send,
			Workers: 2, Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Poll: 10 * time.Millisecond,
			SendTimeout: 5 * time.Second, Observe: obs.observe, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		}
		wg.Go(func() {
			if err := r.Run(rctx); err != nil {
				t.Error(err)
			}
		})
	}
	for e.query(t, `SELECT count(*) FROM sqlfence_outbox WHERE delivered_at IS NULL`) != "0" {
		if ctx.Err() != nil {
			t.Fatal("the relays did not deliver everything within the deadline")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	retried := 0
	for _, k := range keys {
		if !strings.HasPrefix(rcv.applied[k], "/orders job ") {
			t.Errorf("key %s applied as %q", k, rcv.applied[k])
		}
		if rcv.requests[k] > 1 {
			retried++
		}
	}
	if len(rcv.applied) != n || rcv.noKey != 0 {
		t.Errorf("%d keys applied, %d requests without a key; want %d and 0", len(rcv.applied), rcv.noKey, n)
	}
	if retried == 0 || obs.count(outbox.Failed) != retried || obs.count(outbox.Delivered) != n {
		t.Errorf("%d keys retried; observer saw %d failures, %d deliveries (want %d, %d)", retried, obs.count(outbox.Failed), obs.count(outbox.Delivered), retried, n)
	}
	if got := e.query(t, `SELECT count(*) FROM sqlfence_outbox WHERE attempts = 2 AND last_error IS NULL`); got != fmt.Sprint(retried) {
		t.Errorf("%s messages delivered at the second attempt, want %d", got, retried)
	}
	if l := logs.String(); strings.Count(l, "relay: delivered") != n || !strings.Contains(l, "503 Service Unavailable") {
		t.Errorf("the log does not show every delivery and the failures:\n%.2000s", l)
	}
}

// TestParked: a receiver that always fails gets MaxAttempts tries; the
// message is parked, listed, kept, and delivered once requeued to a receiver
// that works.
func TestParked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 30*time.Second)
	keys := seed(t, e, 1)
	var broken atomic.Bool
	broken.Store(true)
	rcv := newReceiver(t, func(string, int) int {
		if broken.Load() {
			return http.StatusInternalServerError
		}
		return 0
	})
	var obs events
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &outbox.Relay{DB: e.raw, Outbox: e.box, Send: (&outbox.HTTP{URL: rcv.srv.URL}).Send,
		MaxAttempts: 3, Backoff: time.Millisecond, MaxBackoff: time.Millisecond, Observe: obs.observe, Logger: slog.New(slog.DiscardHandler)}
	for obs.count(outbox.Parked) == 0 {
		if _, err := r.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("not parked")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if obs.count(outbox.Failed) != 2 || rcv.count(keys[0]) != 3 {
		t.Fatalf("%d failures observed, %d requests, before parking; want 2 and 3", obs.count(outbox.Failed), rcv.count(keys[0]))
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := r.Drain(ctx); err != nil || n != 0 {
		t.Fatalf("Drain after parking made %d attempts (%v); a parked message is not attempted", n, err)
	}
	parked, err := e.box.Parked(ctx, e.raw, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parked) != 1 || parked[0].Key != keys[0] || parked[0].Attempt != 3 || !strings.Contains(parked[0].LastError, "500 Internal Server Error") || parked[0].JobID != "1" || parked[0].Step != "notify" {
		t.Fatalf("parked = %+v", parked)
	}
	if err := e.box.Requeue(ctx, e.raw, "sf1_nosuchkey"); err == nil || !strings.Contains(err.Error(), "no parked message") {
		t.Errorf("requeue of an unknown key: %v", err)
	}
	broken.Store(false)
	if err := e.box.Requeue(ctx, e.raw, keys[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Drain(ctx); err != nil || n != 1 || obs.count(outbox.Delivered) != 1 {
		t.Fatalf("after requeue: %d attempts, %v, %d delivered", n, err, obs.count(outbox.Delivered))
	}
	if rcv.appliedKeys() != 1 {
		t.Fatalf("%d keys applied, want 1", rcv.appliedKeys())
	}
}

// TestSendPanicsOrHangs: a send that panics, and one that ignores its
// context, are failed attempts; the relay carries on with the next message.
func TestSendPanicsOrHangs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 30*time.Second)
	seed(t, e, 3)
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int32
	var obs events
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &outbox.Relay{DB: e.raw, Outbox: e.box, SendTimeout: 100 * time.Millisecond, Backoff: time.Hour, MaxBackoff: time.Hour,
		Observe: obs.observe, Logger: slog.New(slog.DiscardHandler),
		Send: func(ctx context.Context, m outbox.Message) error {
			switch calls.Add(1) {
			case 1:
				panic("receiver client bug")
			case 2:
				<-release // ignores ctx
			}
			return nil
		}}
	start := time.Now()
	if n, err := r.Drain(ctx); err != nil || n != 3 {
		t.Fatalf("Drain: %d attempts, %v; want 3", n, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Drain took %v: the hanging send held the relay", took)
	}
	var pe *outbox.PanicError
	if len(obs.ev) != 3 || !errors.As(obs.ev[0].Err, &pe) || pe.Value != "receiver client bug" || len(pe.Stack) == 0 ||
		!strings.Contains(fmt.Sprint(obs.ev[1].Err), "did not return within SendTimeout") || obs.ev[2].Kind != outbox.Delivered {
		t.Fatalf("events: %+v", obs.ev)
	}
	if got := e.query(t, `SELECT string_agg(coalesce(left(last_error, 40), 'ok'), ' | ' ORDER BY id) FROM sqlfence_outbox`); !strings.Contains(got, "send panicked: receiver client bug") || !strings.Contains(got, "the send did not return") {
		t.Errorf("recorded errors: %s", got)
	}
}

// TestRelayCrash: a relay that died mid-send (simulated: its attempt is
// counted and held, and nothing more) leaves the message to the next relay
// once the hold runs out; a message whose last allowed attempt died is
// parked, not lost, not sent again.
func TestRelayCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 30*time.Second)
	keys := seed(t, e, 2)
	rcv := newReceiver(t, nil)
	var obs events
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &outbox.Relay{DB: e.raw, Outbox: e.box, Send: (&outbox.HTTP{URL: rcv.srv.URL}).Send, MaxAttempts: 3,
		SendTimeout: 100 * time.Millisecond, Observe: obs.observe, Logger: slog.New(slog.DiscardHandler)}
	// The crashed relay's attempt on message 1: counted, held 2 × 100ms.
	e.exec(t, `UPDATE sqlfence_outbox SET attempts = 1, next_attempt_at = now() + interval '200 milliseconds' WHERE key = $1`, keys[0])
	// Message 2's third and last attempt died.
	e.exec(t, `UPDATE sqlfence_outbox SET attempts = 3, last_error = 'earlier failure' WHERE key = $1`, keys[1])
	if n, err := r.Drain(ctx); err != nil || n != 1 || obs.count(outbox.Parked) != 1 {
		t.Fatalf("Drain during the hold: %d attempts, %v, %d parked; want message 2 parked only", n, err, obs.count(outbox.Parked))
	}
	if ev := obs.ev[0]; ev.Message.Key != keys[1] || !strings.Contains(ev.Err.Error(), "attempt 3 of 3 ended without a result") || !strings.Contains(ev.Err.Error(), "earlier failure") {
		t.Fatalf("parking event: %+v", ev)
	}
	time.Sleep(250 * time.Millisecond)
	if n, err := r.Drain(ctx); err != nil || n != 1 || obs.count(outbox.Delivered) != 1 || obs.ev[1].Message.Attempt != 2 {
		t.Fatalf("Drain after the hold: %d attempts, %v, events %+v", n, err, obs.ev)
	}
	if rcv.count(keys[1]) != 0 || rcv.count(keys[0]) != 1 {
		t.Fatalf("requests: parked message %d, crashed one %d; want 0 and 1", rcv.count(keys[1]), rcv.count(keys[0]))
	}
}

// TestRelayStops: a relay stopped during a send gives the attempt back.
func TestRelayStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 30*time.Second)
	seed(t, e, 1)
	var obs events
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	sending := make(chan struct{})
	r := &outbox.Relay{DB: e.raw, Outbox: e.box, Observe: obs.observe, Logger: slog.New(slog.DiscardHandler),
		Send: func(ctx context.Context, m outbox.Message) error {
			close(sending)
			<-ctx.Done()
			return ctx.Err()
		}}
	done := make(chan error)
	go func() { done <- r.Run(rctx) }()
	<-sending
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if obs.count(outbox.Released) != 1 {
		t.Fatalf("events: %+v", obs.ev)
	}
	if got := e.query(t, `SELECT attempts || ':' || (next_attempt_at <= now()) FROM sqlfence_outbox`); got != "0:true" {
		t.Fatalf("after the stop: attempts:due = %s, want 0:true", got)
	}
}

func TestRelayConfig(t *testing.T) {
	t.Parallel()
	box, _ := outbox.New("")
	ctx := context.Background()
	send := func(context.Context, outbox.Message) error { return nil }
	for _, c := range []struct {
		r    outbox.Relay
		want string
	}{
		{outbox.Relay{Outbox: box, Send: send}, "needs DB, Outbox and Send"},
		{outbox.Relay{DB: nilDB, Outbox: box, Send: send, Workers: -1}, "negative setting"},
		{outbox.Relay{DB: nilDB, Outbox: box, Send: send, Backoff: time.Minute, MaxBackoff: time.Second}, "below Backoff"},
	} {
		if err := c.r.Run(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
}

// TestStaleAttempt: an attempt whose message another relay took over
// meanwhile (it outlived its hold) cannot overwrite that attempt's outcome,
// and is not reported as if it had been recorded.
func TestStaleAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 30*time.Second)
	seed(t, e, 1)
	var obs events
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &outbox.Relay{DB: e.raw, Outbox: e.box, Observe: obs.observe, Logger: slog.New(slog.DiscardHandler),
		Send: func(ctx context.Context, m outbox.Message) error {
			// Another relay's attempt 2, still in flight.
			if _, err := e.raw.ExecContext(ctx, `UPDATE sqlfence_outbox SET attempts = 2, last_error = 'attempt 2 in flight'`); err != nil {
				return err
			}
			return errors.New("attempt 1 failed late")
		}}
	if n, err := r.Drain(ctx); err != nil || n != 1 {
		t.Fatalf("Drain: %d, %v", n, err)
	}
	if len(obs.ev) != 0 {
		t.Fatalf("an unrecorded failure was observed: %+v", obs.ev)
	}
	if got := e.query(t, `SELECT attempts || ':' || last_error FROM sqlfence_outbox`); got != "2:attempt 2 in flight" {
		t.Fatalf("the stale attempt overwrote the row: %s", got)
	}
}
