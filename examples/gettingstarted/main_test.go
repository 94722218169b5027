package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var update = flag.Bool("update", false, "rewrite testdata/output.txt with what the example prints")

// TestGettingStarted runs the example as the README tells a user to, and checks
// what it prints against testdata/output.txt, which the README shows.
func TestGettingStarted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, pgtest.NewDB(t), "sqlfence.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	const golden = "testdata/output.txt"
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("the example printed\n%s\nwant (%s; go test -update to refresh it, then the README)\n%s", out.String(), golden, want)
	}
}
