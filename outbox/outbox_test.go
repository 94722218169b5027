package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const testPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
claims:
  - table: jobs
`

// env is one test database: the raw handle (the arbiter, the relay's, and
// the test's window on the data) and the same database through sqlfence.
type env struct {
	raw, fenced *sql.DB
	jobs        *claim.Jobs
	box         *outbox.Outbox
}

func newEnv(t testing.TB, lease time.Duration) *env {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	jobs, err := claim.NewJobs(claim.JobsConfig{Lease: lease, RenewEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	box, err := outbox.New("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range []string{
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		 INSERT INTO inventory (sku, quantity) VALUES ('a', 100)`,
		jobs.Schema(), box.Schema(), box.Schema(),
	} {
		if _, err := raw.ExecContext(ctx, s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
	pol, err := sqlfence.ParsePolicy([]byte(testPolicy), "outbox_test")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fenced := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	t.Cleanup(func() { fenced.Close() })
	return &env{raw: raw, fenced: fenced, jobs: jobs, box: box}
}

func (e *env) query(t testing.TB, q string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s sql.NullString
	if err := e.raw.QueryRowContext(ctx, q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

func (e *env) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.raw.ExecContext(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// add adds one message in a transaction of its own on db and commits.
func (e *env) add(db *sql.DB, l *claim.Lease, step, topic string, payload []byte) (bool, error) {
	return e.addCtx(l.Context(), db, l, step, topic, payload)
}

func (e *env) addCtx(ctx context.Context, db *sql.DB, l *claim.Lease, step, topic string, payload []byte) (bool, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	added, err := e.box.Add(ctx, tx, l, step, topic, payload)
	if err != nil {
		return false, err
	}
	return added, tx.Commit()
}

// TestAdd: a message commits with the handler's transaction; the successor
// adding it again is told, not duplicated; the same key with another message
// is refused; a superseded execution adds nothing; bad input is refused.
func TestAdd(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"sqlfence", "plain"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			const lease = 300 * time.Millisecond
			e := newEnv(t, lease)
			db := e.fenced
			if via == "plain" {
				db = e.raw
			}
			e.exec(t, `INSERT INTO jobs DEFAULT VALUES`)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, err := e.jobs.ClaimNext(ctx, e.raw)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Stop()
			if added, err := e.add(db, a, "receipt", "mail", []byte("hello")); err != nil || !added {
				t.Fatalf("A's add: added %v, %v", added, err)
			}
			// A rolled-back transaction takes its message with it.
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if added, err := e.box.Add(ctx, tx, a, "invoice", "mail", nil); err != nil || !added {
				t.Fatalf("A's second add: added %v, %v", added, err)
			}
			tx.Rollback()
			for _, c := range []struct{ step, topic, want string }{
				{"", "mail", "empty"},
				{strings.Repeat("s", claim.MaxStepBytes+1), "mail", "over the limit"},
				{"x", "", "topic is empty"},
				{"x", strings.Repeat("t", outbox.MaxTopicBytes+1), "over the limit"},
				{"x", "a\x00b", "NUL byte"},
				{"x", "\xff", "not valid UTF-8"},
			} {
				if _, err := e.add(db, a, c.step, c.topic, nil); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("add(step %.20q, topic %.20q): %v, want it to say %q", c.step, c.topic, err, c.want)
				}
			}

			time.Sleep(lease + 50*time.Millisecond) // A is paused past its lease
			b, err := e.jobs.ClaimNext(ctx, e.raw)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Stop()
			if added, err := e.add(db, b, "receipt", "mail", []byte("hello")); err != nil || added {
				t.Fatalf("B's add of the step A committed: added %v, %v; want reported, not added", added, err)
			}
			_, err = e.add(db, b, "receipt", "mail", []byte("hello again"))
			if !errors.Is(err, outbox.ErrKeyReused) || !strings.Contains(err.Error(), "added at epoch") {
				t.Fatalf("B's add of another message under A's key: %v, want ErrKeyReused", err)
			}
			// A wakes: it can add nothing, not even what it added before. (The
			// first refusal cancels A's context: the later tries use another.)
			for _, step := range []string{"invoice", "receipt"} {
				_, err := e.addCtx(ctx, db, a, step, "mail", []byte("hello"))
				var fe *sqlfence.Error
				if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.StoredEpoch != b.Epoch || fe.Table != "jobs" {
					t.Fatalf("superseded A's add of %s: %v; want ErrFenced by B's epoch %d", step, err, b.Epoch)
				}
				if !errors.Is(context.Cause(a.Context()), sqlfence.ErrFenced) {
					t.Fatalf("A's refused add left its context with cause %v", context.Cause(a.Context()))
				}
			}
			if added, err := e.add(db, b, "invoice", "mail", nil); err != nil || !added {
				t.Fatalf("B's add of the step A rolled back: added %v, %v", added, err)
			}
			want := "invoice:" + itoa(b.Epoch) + ",receipt:" + itoa(a.Epoch)
			if got := e.query(t, `SELECT string_agg(step || ':' || epoch, ',' ORDER BY step) FROM sqlfence_outbox`); got != want {
				t.Errorf("outbox holds %s, want %s", got, want)
			}
			ka, _ := a.Key("receipt")
			if got := e.query(t, `SELECT key FROM sqlfence_outbox WHERE step = 'receipt'`); got != ka {
				t.Errorf("the message's key is %s, want the step's effect key %s", got, ka)
			}
		})
	}
}

// TestAddOrderedBeforeTakeover: an execution whose lease runs out while its
// transaction with a message is open holds the takeover off until it ends.
func TestAddOrderedBeforeTakeover(t *testing.T) {
	t.Parallel()
	const lease = 200 * time.Millisecond
	e := newEnv(t, lease)
	e.exec(t, `INSERT INTO jobs DEFAULT VALUES`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := e.jobs.ClaimNext(ctx, e.raw)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	tx, err := e.fenced.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := e.box.Add(ctx, tx, a, "receipt", "mail", nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease + 50*time.Millisecond)
	if _, err := e.jobs.ClaimNext(ctx, e.raw); !errors.Is(err, claim.ErrNoJob) {
		t.Fatalf("takeover during A's open transaction: %v, want the job skipped", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := e.jobs.ClaimNext(ctx, e.raw)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if added, err := e.add(e.fenced, b, "receipt", "mail", nil); err != nil || added {
		t.Fatalf("B's add: added %v, %v; want it reported as added", added, err)
	}
	if _, err := outbox.New(`"unterminated`); err == nil || !strings.Contains(err.Error(), "bad outbox table") {
		t.Errorf("bad table name: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
