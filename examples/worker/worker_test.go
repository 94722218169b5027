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

// TestWorker runs the example to completion — several workers, one paused
// past its lease — and checks the business tables independently of the
// example's own verification.
func TestWorker(t *testing.T) {
	dsn := pgtest.NewDB(t)
	var out bytes.Buffer
	const jobs = 30
	err := run(context.Background(), dsn, config{Workers: 4, Jobs: jobs, Lease: 500 * time.Millisecond, Pause: 800 * time.Millisecond, Log: &out})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var done, reserved, wrong int
	err = raw.QueryRow(`SELECT
		(SELECT count(*) FROM worker_example.jobs WHERE status = 'done'),
		(SELECT count(DISTINCT job_id) FROM worker_example.reservations),
		(SELECT count(*) FROM worker_example.inventory i
		 WHERE quantity <> 1000 - (SELECT coalesce(sum(j.qty), 0) FROM worker_example.jobs j WHERE j.sku = i.sku))`).Scan(&done, &reserved, &wrong)
	if err != nil {
		t.Fatal(err)
	}
	if done != jobs || reserved != jobs || wrong != 0 {
		t.Fatalf("%d jobs done, %d reserved, %d stock rows off; want %d, %d, 0", done, reserved, wrong, jobs, jobs)
	}
	if !strings.Contains(out.String(), "worker 0: job 1 (epoch 4294967297): paused for") {
		t.Errorf("worker 0 did not report its pause")
	}
	if !strings.Contains(out.String(), "every job applied exactly once") {
		t.Errorf("the example did not report its verification")
	}
}
