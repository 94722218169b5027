// Command benchdeploy is one deploy, for the root package's BenchmarkDeployProcess:
// a new process opens a fresh pool — sqlfence's (-side sqlfence: a new connector in a
// new process, nothing cached) or raw pgx's (-side raw) — and runs a catalogue of
// statements once each, then prints, as one JSON object, how long that took from
// opening the pool and how long its first statement took (connecting, and on
// sqlfence's side reading the catalog).
//
// The catalogue is the benchmark's (-work: a JSON file of statements, each with its
// text for either side and whether it is a read), so that the statements live once,
// in bench_cold_test.go.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// Statement is one statement of the catalogue: sqlfence's side sends SQL, the raw
// side Raw (sqlfence's fenced text, with the epoch as its last argument when Fenced).
type Statement struct {
	SQL, Raw string
	Read     bool
	Fenced   bool
	ID       int
}

// Result is what a run prints.
type Result struct {
	TotalNS int64 `json:"total_ns"`
	FirstNS int64 `json:"first_ns"`
}

func main() {
	side := flag.String("side", "", "sqlfence or raw")
	dsn := flag.String("dsn", "", "the database (for sqlfence: with sqlfence_policy=…)")
	work := flag.String("work", "", "the catalogue, a JSON array of statements")
	epoch := flag.Int64("epoch", 1<<40, "the epoch the fenced writes carry")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the run here")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchdeploy:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(*side, *dsn, *work, *epoch); err != nil {
		fmt.Fprintln(os.Stderr, "benchdeploy:", err)
		os.Exit(1)
	}
}

func run(side, dsn, work string, epoch int64) error {
	data, err := os.ReadFile(work)
	if err != nil {
		return err
	}
	var stmts []Statement
	if err := json.Unmarshal(data, &stmts); err != nil {
		return err
	}
	driver := map[string]string{"sqlfence": "sqlfence", "raw": "pgx"}[side]
	if driver == "" {
		return fmt.Errorf("-side %q: want sqlfence or raw", side)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx = sqlfence.WithEpoch(ctx, epoch)
	t0 := time.Now()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var res Result
	for i, s := range stmts {
		q, args := s.SQL, []any{s.ID}
		if side == "raw" {
			q = s.Raw
			if s.Fenced {
				args = append(args, epoch)
			}
		}
		if s.Read {
			var a, e int64
			err = db.QueryRowContext(ctx, q, args...).Scan(&a, &e)
		} else {
			_, err = db.ExecContext(ctx, q, args...)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if i == 0 {
			res.FirstNS = int64(time.Since(t0))
		}
	}
	res.TotalNS = int64(time.Since(t0))
	return json.NewEncoder(os.Stdout).Encode(res)
}
