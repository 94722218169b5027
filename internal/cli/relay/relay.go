// Package relay is `sqlfence relay`: it delivers an outbox table's messages over
// HTTP with their effect keys, lists parked messages and requeues them.
package relay

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/outbox"
)

const usage = `Usage: sqlfence relay --dsn DSN --url URL [flags]
       sqlfence relay --dsn DSN --parked
       sqlfence relay --dsn DSN --requeue KEY

Delivers the messages of an outbox table (the outbox package's; default
sqlfence_outbox) at least once: each is POSTed to --url, "{topic}" in it replaced by
the message's topic, with the message's effect key in the Idempotency-Key header. A
2xx answer marks it delivered. Anything else is retried after a delay that doubles
from --backoff up to --max-backoff; after --max-attempts the message is parked: it
stays in the table, listed by --parked, until --requeue KEY makes it due again. A
receiver that does not deduplicate by the key applies a redelivered message twice.

Any number of relays (this command, or outbox.Relay in a program) can share a table.
It runs until SIGINT or SIGTERM, or with --once until no message is due. Progress and
failures are logged to stderr, one line each.

Exit status: 0 stopped, drained or requeued; 1 --parked found parked messages; 2 usage
or database error.

Flags:
`

// Run is sqlfence relay.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("relay", usage)
	dsn := f.String("dsn", "", "the database holding the outbox table")
	table := f.String("table", outbox.DefaultTable, "the outbox table")
	target := f.String("url", "", `where messages are POSTed; "{topic}" is replaced by the message's topic`)
	contentType := f.String("content-type", "application/octet-stream", "the requests' Content-Type")
	workers := f.Int("workers", 1, "concurrent sends")
	maxAttempts := f.Int("max-attempts", 10, "attempts before a message is parked")
	backoff := f.Duration("backoff", time.Second, "delay after a first failure; doubles with each")
	maxBackoff := f.Duration("max-backoff", 5*time.Minute, "the delay's cap")
	timeout := f.Duration("timeout", 30*time.Second, "how long one send may take")
	poll := f.Duration("poll", time.Second, "how long an idle relay waits before looking again")
	once := f.Bool("once", false, "attempt every due message once, then exit")
	parked := f.Bool("parked", false, "list parked messages and exit")
	requeue := f.String("requeue", "", "make the parked message with this key due again, and exit")
	logFormat := f.String("log-format", "text", "log lines as text or json")
	connectTimeout := f.Duration("connect-timeout", cmdutil.DefaultConnectTimeout, "how long to wait for the database to answer")
	pos, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(pos) > 0:
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	case *dsn == "":
		return f.UsageError(stderr, "no database: give --dsn postgres://user@host:5432/dbname")
	case *parked && *requeue != "":
		return f.UsageError(stderr, "give --parked or --requeue, not both")
	case !*parked && *requeue == "" && *target == "":
		return f.UsageError(stderr, "no receiver: give --url https://host/path/{topic}")
	case *workers < 1 || *maxAttempts < 1:
		return f.UsageError(stderr, "--workers and --max-attempts must be at least 1")
	case *backoff <= 0 || *maxBackoff < *backoff || *timeout <= 0 || *poll <= 0:
		return f.UsageError(stderr, "--backoff, --timeout and --poll must be positive, and --max-backoff at least --backoff")
	case *logFormat != "text" && *logFormat != "json":
		return f.UsageError(stderr, "--log-format is text or json, not %q", *logFormat)
	}
	box, err := outbox.New(*table)
	if err != nil {
		return cmdutil.Fail(stderr, "relay", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := open(ctx, *dsn, *connectTimeout)
	if err != nil {
		return cmdutil.Fail(stderr, "relay", err)
	}
	defer db.Close()

	switch {
	case *parked:
		return listParked(ctx, stdout, stderr, db, box)
	case *requeue != "":
		if err := box.Requeue(ctx, db, *requeue); err != nil {
			return cmdutil.Fail(stderr, "relay", err)
		}
		fmt.Fprintf(stdout, "requeued %s\n", *requeue)
		return cmdutil.ExitOK
	}
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if *logFormat == "json" {
		h = slog.NewJSONHandler(stderr, nil)
	}
	r := &outbox.Relay{
		DB: db, Outbox: box,
		Send:    (&outbox.HTTP{URL: *target, ContentType: *contentType, Client: &http.Client{}}).Send,
		Workers: *workers, MaxAttempts: *maxAttempts, Backoff: *backoff, MaxBackoff: *maxBackoff,
		SendTimeout: *timeout, Poll: *poll, Logger: slog.New(h),
	}
	if *once {
		n, err := r.Drain(ctx)
		if err != nil {
			return cmdutil.Fail(stderr, "relay", err)
		}
		fmt.Fprintf(stdout, "%d %s\n", n, cmdutil.Plural(n, "attempt", "attempts"))
		return cmdutil.ExitOK
	}
	if err := r.Run(ctx); err != nil {
		return cmdutil.Fail(stderr, "relay", err)
	}
	return cmdutil.ExitOK
}

// open opens the relay's pool and checks that the database answers.
func open(ctx context.Context, dsn string, timeout time.Duration) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bad --dsn: %w", err)
	}
	if timeout <= 0 {
		timeout = cmdutil.DefaultConnectTimeout
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > timeout {
		cfg.ConnectTimeout = timeout
	}
	db := stdlib.OpenDB(*cfg)
	pctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot connect to %s within %v: %w", cmdutil.DescribeTarget(cfg), timeout, err)
	}
	return db, nil
}

func listParked(ctx context.Context, stdout, stderr io.Writer, db *sql.DB, box *outbox.Outbox) int {
	const limit = 1000
	msgs, err := box.Parked(ctx, db, limit)
	if err != nil {
		return cmdutil.Fail(stderr, "relay", err)
	}
	for _, m := range msgs {
		fmt.Fprintf(stdout, "%s  topic %q  job %s/%s step %q  %d %s  last error: %s\n",
			m.Key, m.Topic, m.JobTable, m.JobID, m.Step, m.Attempt, cmdutil.Plural(m.Attempt, "attempt", "attempts"), m.LastError)
	}
	if len(msgs) == 0 {
		fmt.Fprintf(stdout, "no parked messages in %s\n", box.Table())
		return cmdutil.ExitOK
	}
	if len(msgs) == limit {
		fmt.Fprintf(stdout, "(the first %d; more may be parked)\n", limit)
	}
	return cmdutil.ExitFindings
}
