package check

// sqlfence check on Go packages: the real analyzer, built from contrib/analyzer, run
// over the module in testdata/gomod.

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

var update = flag.Bool("update", false, "rewrite testdata/readme/gopackages.txt, which docs/analyzer.md shows, with what check prints")

// buildVetTool builds sqlfence-vet into a temporary directory. Without a go command
// or the analyzer's module the test is skipped, except under CI=true, where it fails.
func buildVetTool(t *testing.T) string {
	t.Helper()
	fail := t.Skipf
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		fail = t.Fatalf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), vetTool)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sqlfence-vet")
	cmd.Dir = filepath.Join("..", "..", "..", "contrib", "analyzer")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		fail("building %s: %v\n%s", vetTool, err, out)
	}
	return bin
}

// TestCheckGoPackages: ./... and import paths go to the analyzer, whose reports join
// check's findings in every format with check's exit codes; directories given with
// them are searched for .sql files only.
func TestCheckGoPackages(t *testing.T) {
	bin := buildVetTool(t)
	golden, err := filepath.Abs("testdata/readme/gopackages.txt")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../../contrib/analyzer/testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("testdata/gomod")
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOWORK", "off")
	base := []string{"--policy", "sqlfence.yaml", "--vettool", bin}

	t.Run("text", func(t *testing.T) {
		stdout, stderr, code := cli(t, append(base, "./...", "migrations")...)
		clitest.WantCode(t, code, cmdutil.ExitFindings, stdout, stderr)
		want := []string{
			"admin/admin.go:17:10: SF306: sqlfence would refuse the SQL of this sql.DB.ExecContext call: table inventory: a string of 2 statements",
			"catalog/catalog.go:14:2: SF413: sqlfence would refuse the SQL of this sql.DB.QueryRowContext call: call of stock_of",
			"migrations/001_backfill.sql:1:1: SF801: ",
			"shop.go:19:12: SF301: sqlfence would refuse the SQL of this sql.DB.ExecContext call: table inventory: TRUNCATE cannot be fenced",
			"shop.go:24:12: SF805: this sql.DB.ExecContext call writes protected table inventory with SQL built at run time",
		}
		var got []string
		for _, l := range strings.Split(stdout, "\n") {
			if l != "" && !strings.HasPrefix(l, "\t") {
				got = append(got, l)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("findings:\n%s\nwant %d lines starting with:\n%s", stdout, len(want), strings.Join(want, "\n"))
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("finding %d:\n%s\nwant it to start with\n%s", i, got[i], want[i])
			}
		}
		clitest.WantContains(t, "stderr", stderr, "sqlfence check: 5 findings in Go packages ./... and 1 file (1 statement checked)")
	})

	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := cli(t, append(base, "--format", "json", "--tests", "example.com/shop")...)
		clitest.WantCode(t, code, cmdutil.ExitFindings, stdout, stderr)
		var res result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		// --tests: the test file's TRUNCATE too; the package and its test variant
		// report shop.go's calls once.
		got := where(res.Findings)
		want := []string{"shop.go:19:12 SF301", "shop.go:24:12 SF805", "shop_test.go:10:2 SF301"}
		if !slices.Equal(got, want) || !slices.Equal(res.Packages, []string{"example.com/shop"}) {
			t.Errorf("findings %v (packages %v), want %v", got, res.Packages, want)
		}
		if f := res.Findings[0]; f.EndLine != 19 || f.EndColumn != 53 || strings.HasPrefix(f.Message, "SF301") {
			t.Errorf("SF301 finding %+v: want it to end at 19:53 and its message without the code", f)
		}
	})

	t.Run("sarif", func(t *testing.T) {
		stdout, stderr, code := cli(t, append(base, "--format", "sarif", "example.com/shop/admin")...)
		clitest.WantCode(t, code, cmdutil.ExitFindings, stdout, stderr)
		var log sarifLog
		if err := json.Unmarshal([]byte(stdout), &log); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		res := log.Runs[0].Results
		if len(res) != 1 || res[0].RuleID != "SF306" {
			t.Fatalf("results %+v, want SF306 only (the suppressed TRUNCATE is not one)", res)
		}
		if loc := res[0].Locations[0].PhysicalLocation; loc.ArtifactLocation.URI != "admin/admin.go" || loc.Region.StartColumn != 10 {
			t.Errorf("SF306 at %+v, want admin/admin.go column 10 (code points: é is one)", loc)
		}
	})

	// --dsn reaches the analyzer: the catalog package's statements are decided with
	// the database's catalog, and a policy the database does not match stops it.
	t.Run("dsn", func(t *testing.T) {
		dsn := pgtest.NewDB(t)
		raw := clitest.PGConnect(t, dsn, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := raw.Exec(ctx, `
			CREATE TABLE inventory (sku text, quantity int, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku);
			CREATE TABLE inventory_a PARTITION OF inventory FOR VALUES IN ('a');
			CREATE FUNCTION stock_of(s text) RETURNS int LANGUAGE sql AS 'SELECT quantity FROM inventory WHERE sku = s';`); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := cli(t, append(base, "--format", "json", "--dsn", dsn, "example.com/shop/catalog")...)
		clitest.WantCode(t, code, cmdutil.ExitFindings, stdout, stderr)
		var res result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if got := where(res.Findings); !slices.Equal(got, []string{"catalog.go:13:2 SF301"}) {
			t.Errorf("with --dsn: %v, want the partition's TRUNCATE only", got)
		}

		typo := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables: [inventroy]\n")
		stdout, stderr, code = cli(t, "--policy", typo, "--vettool", bin, "--dsn", dsn, "example.com/shop/catalog")
		clitest.WantCode(t, code, cmdutil.ExitError, stdout, stderr)
		clitest.WantContains(t, "stdout", stdout, "SF520")
		clitest.WantContains(t, "stderr", stderr, "Go package example.com/shop/catalog: error: ", "-dsn", "inventroy")
	})

	// The example of docs/analyzer.md: the analyzer's example module, sqlfence-vet on PATH.
	t.Run("readme", func(t *testing.T) {
		t.Chdir(example)
		t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		args := []string{"--policy", "sqlfence.yaml", "./..."}
		stdout, stderr, code := cli(t, args...)
		clitest.WantCode(t, code, cmdutil.ExitFindings, stdout, stderr)
		got := "$ sqlfence check " + strings.Join(args, " ") + "\n" + stdout + stderr
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if want, err := os.ReadFile(golden); err != nil || string(want) != got {
			t.Errorf("printed\n%s\nwant (%s; go test -update refreshes it, then go test ./internal/readme -update the docs)\n%s", got, golden, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		stdout, stderr, code := cli(t, append(base, "./nothing/...")...)
		clitest.WantCode(t, code, cmdutil.ExitError, stdout, stderr)
		clitest.WantContains(t, "stderr", stderr, "./nothing/", "could not be checked")
	})

	t.Run("missing analyzer", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		stdout, stderr, code := cli(t, "--policy", "sqlfence.yaml", "./...")
		clitest.WantCode(t, code, cmdutil.ExitError, stdout, stderr)
		clitest.WantContains(t, "stderr", stderr, "sqlfence-vet", "neither on PATH nor next to sqlfence",
			"go install github.com/sqlfence/sqlfence/contrib/analyzer/cmd/sqlfence-vet@latest", "--vettool")
	})
}

func TestIsPackagePattern(t *testing.T) {
	t.Parallel()
	for arg, want := range map[string]bool{
		"./...": true, "...": true, "./internal/...": true, "example.com/shop/...": true,
		"example.com/shop": true, "example.com/shop/admin": true,
		"testdata":       false, // a directory on disk
		"testdata/sql":   false,
		"migrtions":      false, // a mistyped directory: reported as missing
		"./pkg":          false,
		"/abs/dir":       false,
		"schema.sql":     false,
		"db/queries.sql": false,
		"main.go":        false,
	} {
		if got := isPackagePattern(arg); got != want {
			t.Errorf("isPackagePattern(%q) = %v, want %v", arg, got, want)
		}
	}
}
