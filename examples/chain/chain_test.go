package main

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestChain runs the example to completion — chains of links, a worker
// paused past its lease after committing a link's first step, a receiver that
// fails now and then — and checks the tables independently of the example's
// own verification.
func TestChain(t *testing.T) {
	dsn := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	const chains, links = 4, 3
	err := run(ctx, dsn, config{Chains: chains, Links: links, Workers: 3, Lease: 500 * time.Millisecond, Pause: 800 * time.Millisecond, Log: &out})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var jobs, done, shipments, messages, delivered, retried int
	err = raw.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM chain_example.jobs),
		(SELECT count(*) FROM chain_example.jobs WHERE status = 'done'),
		(SELECT count(*) FROM chain_example.shipments),
		(SELECT count(*) FROM chain_example.sqlfence_outbox),
		(SELECT count(*) FROM chain_example.sqlfence_outbox WHERE delivered_at IS NOT NULL),
		(SELECT count(*) FROM chain_example.sqlfence_outbox WHERE attempts > 1)`).Scan(&jobs, &done, &shipments, &messages, &delivered, &retried)
	if err != nil {
		t.Fatal(err)
	}
	const n = chains * links
	if jobs != n || done != n || shipments != n || messages != n || delivered != n {
		t.Fatalf("%d jobs, %d done, %d shipments, %d messages, %d delivered; want %d each", jobs, done, shipments, messages, delivered, n)
	}
	if retried == 0 {
		t.Error("no message needed a second attempt: the receiver's failures did not happen")
	}
	for _, want := range []string{
		"worker 0: chain 1 link 1 (job 1, epoch 4294967297): shipped, then paused for",
		"step ship was committed by an earlier execution; skipped",
		"worker 0: chain 1 link 1 (job 1, epoch 4294967297): superseded",
		"every chain ran end to end exactly once",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the example's output lacks %q", want)
		}
	}
}
