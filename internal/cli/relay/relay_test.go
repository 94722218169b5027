package relay_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/cli/relay"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestUsage(t *testing.T) {
	t.Parallel()
	out, errOut, code := clitest.Run(t, relay.Run, "--help")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "--help", out, "Usage: sqlfence relay", "Idempotency-Key", "Exit status", "Flags:\n  --")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no database"},
		{[]string{"--dsn", "x"}, "no receiver"},
		{[]string{"--dsn", "x", "--url", "http://h", "--workers", "0"}, "at least 1"},
		{[]string{"--dsn", "x", "--url", "http://h", "--backoff", "1m", "--max-backoff", "1s"}, "--max-backoff at least --backoff"},
		{[]string{"--dsn", "x", "--parked", "--requeue", "k"}, "not both"},
		{[]string{"--dsn", "x", "--url", "http://h", "--log-format", "xml"}, "text or json"},
		{[]string{"--dsn", "x", "--url", "http://h", "extra"}, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	} {
		out, errOut, code := clitest.Run(t, relay.Run, c.args...)
		clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
		clitest.WantContains(t, strings.Join(c.args, " "), errOut, c.want)
	}
	out, errOut, code = clitest.Run(t, relay.Run, "--dsn", clitest.SilentServer(t), "--url", "http://h", "--connect-timeout", "200ms")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "silent server", errOut, "cannot connect", "within 200ms")
}

// TestRelayCommand: --once delivers with the key, a failing receiver's message
// is parked after --max-attempts and listed by --parked, --requeue makes it due.
func TestRelayCommand(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs, _ := claim.NewJobs(claim.JobsConfig{RenewEvery: -1})
	box, _ := outbox.New("app_outbox")
	for _, s := range []string{jobs.Schema(), box.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for _, topic := range []string{"good", "bad"} {
		l, err := jobs.ClaimNext(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := box.Add(ctx, tx, l, "notify", topic, []byte("p")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		k, _ := l.Key("notify")
		keys = append(keys, k)
		l.Stop()
	}
	var (
		mu   sync.Mutex
		got  = map[string]string{}
		fail atomic.Bool
	)
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bad") && fail.Load() {
			http.Error(w, "nope", http.StatusBadGateway)
			return
		}
		mu.Lock()
		got[r.Header.Get("Idempotency-Key")] = r.URL.Path
		mu.Unlock()
	}))
	defer srv.Close()
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := clitest.Run(t, relay.Run, append([]string{"--dsn", dsn, "--table", "app_outbox"}, args...)...)
		clitest.WantCode(t, code, want, out, errOut)
		return out, errOut
	}
	out, errOut := run(cmdutil.ExitOK, "--url", srv.URL+"/in/{topic}", "--once", "--max-attempts", "1")
	clitest.WantContains(t, "--once", out, "2 attempts")
	clitest.WantContains(t, "the log", errOut, "relay: delivered", "relay: message parked", "502 Bad Gateway", "key="+keys[1])
	mu.Lock()
	if got[keys[0]] != "/in/good" || len(got) != 1 {
		t.Errorf("received %v, want only %s at /in/good", got, keys[0])
	}
	mu.Unlock()
	out, _ = run(cmdutil.ExitFindings, "--parked")
	clitest.WantContains(t, "--parked", out, keys[1], `topic "bad"`, "job jobs/2", "1 attempt ", "502 Bad Gateway")
	out, _ = run(cmdutil.ExitOK, "--requeue", keys[1])
	clitest.WantContains(t, "--requeue", out, "requeued "+keys[1])
	_, errOut = run(cmdutil.ExitError, "--requeue", keys[1])
	clitest.WantContains(t, "second --requeue", errOut, "no parked message")
	fail.Store(false)
	run(cmdutil.ExitOK, "--url", srv.URL+"/in/{topic}", "--once", "--log-format", "json")
	out, _ = run(cmdutil.ExitOK, "--parked")
	clitest.WantContains(t, "--parked", out, "no parked messages in app_outbox")
	mu.Lock()
	if got[keys[1]] != "/in/bad" {
		t.Errorf("after requeue: received %v", got)
	}
	mu.Unlock()
}
