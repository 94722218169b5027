// Command suite runs GORM's own test suite (gorm.io/gorm/tests, a module of GORM's
// repository) against PostgreSQL three times — through plain pgx, through sqlfence
// with a policy that protects none of GORM's tables, and through sqlfence with
// GORM's users table protected and a fresh epoch on every statement — and prints
// each test whose outcome differs from plain pgx's, with the rule codes of the
// refusals it logged.
//
//	cd contrib/gorm && go run ./suite -gorm /path/to/gorm-checkout
//
// Nothing of GORM is kept in this repository: the checkout (any directory holding
// GORM's go.mod and tests/) is copied to a temporary directory, and the copy gets
// one file of this program's (harness.go.txt: the sqlfence driver, epochs on the
// context) and two one-line edits of its tests_test.go: OpenTestConnection's
// postgres.Config names the harness's driver, and init migrates through
// suiteRunMigrations (plain pgx under users, where DROP TABLE users is refused on a
// fenced handle). The copy's go.mod requires this checkout of sqlfence, so all three
// runs use one module graph. A throwaway PostgreSQL (internal/pgcluster) serves a
// fresh database per run.
//
// GORM opens its postgres dialector with PreferSimpleProtocol; a driver name makes
// the dialector ignore that flag, so the sqlfence runs say
// default_query_exec_mode=simple_protocol in the DSN instead.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

//go:embed harness.go.txt
var harness []byte

// runs are the configurations, plain first: the others are compared with it.
var runs = []struct{ name, policy, setup string }{
	{name: "plain"},
	{name: "none", policy: `version: 1
resolve: catalog
ddl: allow
catalog_refresh: 1h
tables:
  - name: sqlfence_unrelated
`, setup: `CREATE TABLE sqlfence_unrelated (id int PRIMARY KEY, writer_epoch bigint NOT NULL DEFAULT 0)`},
	{name: "users", policy: `version: 1
resolve: catalog
ddl: allow
catalog_refresh: 1s
tables:
  - name: users
`, setup: usersEpochColumn},
}

// usersEpochColumn gives every users table GORM creates the epoch column, as the
// migration that protects a table would, and creates one for the connector to find
// at start (GORM's init migrates after it opened the database, through plain pgx:
// catalog_refresh: 1s has the connector read the catalog again soon after).
const usersEpochColumn = `
CREATE TABLE users (id bigserial PRIMARY KEY, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE FUNCTION sqlfence_suite_epoch_column() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM pg_event_trigger_ddl_commands() c WHERE c.object_type = 'table' AND c.object_identity = 'public.users') THEN
		ALTER TABLE public.users ADD COLUMN IF NOT EXISTS writer_epoch bigint NOT NULL DEFAULT 0;
	END IF;
END $$;
CREATE EVENT TRIGGER sqlfence_suite_epoch_column ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
	EXECUTE FUNCTION sqlfence_suite_epoch_column();`

func main() {
	gormDir := flag.String("gorm", "", "a checkout of github.com/go-gorm/gorm (holds go.mod and tests/)")
	run := flag.String("run", "", "go test -run pattern (all tests when empty)")
	keep := flag.Bool("keep", false, "keep the temporary copy and print its path")
	flag.Parse()
	if *gormDir == "" {
		log.Fatal("suite: -gorm PATH is required")
	}
	self, err := moduleRoot()
	if err != nil {
		log.Fatal(err)
	}
	work, err := prepare(*gormDir, self)
	if err != nil {
		log.Fatal(err)
	}
	if *keep {
		log.Printf("suite: the copy is %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	ctx := context.Background()
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Stop()

	results := make([]map[string]*outcome, len(runs))
	for i, r := range runs {
		start := time.Now()
		res, err := runSuite(ctx, cluster, work, r.name, r.name, r.policy, r.setup, *run)
		if err != nil {
			log.Fatalf("suite: %s: %v", r.name, err)
		}
		log.Printf("suite: %s: %s in %s", r.name, tally(res), time.Since(start).Round(time.Second))
		// A test refused by sqlfence (a rule code in its output) can leave GORM's
		// shared tables half migrated — TestMigrate's DROP TABLE users is refused
		// after it dropped others — and later tests then fail for that alone. So the
		// tests that failed with no rule code where plain pgx passed run again,
		// together, on a fresh database: their second outcome is their own.
		if i > 0 {
			var again []string
			for t, o := range res {
				if p := results[0][t]; o.action == "fail" && len(o.codes) == 0 && p != nil && p.action == "pass" {
					again = append(again, regexp.QuoteMeta(t))
				}
			}
			if len(again) > 0 {
				sort.Strings(again)
				alone, err := runSuite(ctx, cluster, work, r.name, r.name+"_again", r.policy, r.setup, "^("+strings.Join(again, "|")+")$")
				if err != nil {
					log.Fatalf("suite: %s, again: %v", r.name, err)
				}
				log.Printf("suite: %s: the %d tests that failed with no rule code, again on a fresh database: %s", r.name, len(again), tally(alone))
				for t, o := range alone {
					o.again = true
					res[t] = o
				}
			}
		}
		results[i] = res
	}
	fmt.Printf("GORM's test suite (%s), top-level tests:\n", *gormDir)
	for i, r := range runs {
		fmt.Printf("  %-6s %s\n", r.name, tally(results[i]))
	}
	for i := 1; i < len(runs); i++ {
		fmt.Printf("\n%s against plain pgx:\n", runs[i].name)
		diff(results[0], results[i])
	}
}

// moduleRoot is the sqlfence checkout this program is part of.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/sqlfence/sqlfence").Output()
	if err != nil {
		return "", fmt.Errorf("suite: finding sqlfence's module (run from contrib/gorm): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// prepare copies the checkout and applies the harness.
func prepare(src, sqlfenceDir string) (string, error) {
	if _, err := os.Stat(filepath.Join(src, "tests", "tests_test.go")); err != nil {
		return "", fmt.Errorf("suite: %s is not a GORM checkout: %w", src, err)
	}
	work, err := os.MkdirTemp("", "sqlfence-gorm-suite-")
	if err != nil {
		return "", err
	}
	if err := copyTree(src, work); err != nil {
		return "", err
	}
	tests := filepath.Join(work, "tests")
	path := filepath.Join(tests, "tests_test.go")
	text, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, e := range []struct{ old, new string }{
		{"postgres.New(postgres.Config{\n\t\t\tDSN:", "postgres.New(postgres.Config{\n\t\t\tDriverName: suiteDriverName(),\n\t\t\tDSN:"},
		{"\t\tRunMigrations()\n\t}", "\t\tsuiteRunMigrations()\n\t}"},
	} {
		if bytes.Count(text, []byte(e.old)) != 1 {
			return "", fmt.Errorf("suite: tests_test.go no longer has %q once: this GORM version needs the harness updated", e.old)
		}
		text = bytes.Replace(text, []byte(e.old), []byte(e.new), 1)
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tests, "zz_sqlfence_harness_test.go"), harness, 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{
		{"mod", "edit", "-require=github.com/sqlfence/sqlfence@v0.0.0-00010101000000-000000000000", "-replace=github.com/sqlfence/sqlfence=" + sqlfenceDir},
		{"mod", "tidy"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Stderr = tests, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("suite: go %s: %w", strings.Join(args, " "), err)
		}
	}
	return work, nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// outcome is one top-level test's result and the rule codes its output names.
type outcome struct {
	action string // pass, fail, skip
	codes  map[string]bool
	first  string // the first line naming a rule code, for the report
	// firstFail is the first line of the test's own output (a failed assertion).
	firstFail string
	again     bool // the outcome of the run again on a fresh database
}

var ruleCode = regexp.MustCompile(`\[SF\d{3}\]`)

// runSuite runs GORM's tests once, on a fresh database.
func runSuite(ctx context.Context, cluster *pgcluster.Cluster, work, name, dbName, policy, setup, pattern string) (map[string]*outcome, error) {
	db := "gorm_" + dbName
	admin, err := pgx.Connect(ctx, cluster.DSN())
	if err != nil {
		return nil, err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	admin.Close(ctx)
	if err != nil {
		return nil, err
	}
	plainDSN := strings.Replace(cluster.DSN(), "/postgres?", "/"+db+"?", 1)
	if setup != "" {
		c, err := pgx.Connect(ctx, plainDSN)
		if err != nil {
			return nil, err
		}
		_, err = c.Exec(ctx, setup)
		c.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	dsn := plainDSN + "&TimeZone=Asia/Shanghai"
	if policy != "" {
		path := filepath.Join(work, "sqlfence-"+dbName+".yaml")
		if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
			return nil, err
		}
		dsn += "&default_query_exec_mode=simple_protocol&sqlfence_policy=" + path
	}
	args := []string{"test", "-json", "-count=1", "-timeout=30m"}
	if pattern != "" {
		args = append(args, "-run", pattern)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, ".")...)
	cmd.Dir = filepath.Join(work, "tests")
	cmd.Env = append(os.Environ(), "GORM_DIALECT=postgres", "GORM_DSN="+dsn, "SQLFENCE_SUITE="+name,
		"SQLFENCE_SUITE_PLAIN_DSN="+plainDSN+"&TimeZone=Asia/Shanghai", "DEBUG=false")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	res := map[string]*outcome{}
	var pkgOut strings.Builder // the package's own output: a failed init says why here
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Test == "" {
			pkgOut.WriteString(ev.Output)
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		o := res[top]
		if o == nil {
			o = &outcome{codes: map[string]bool{}}
			res[top] = o
		}
		switch {
		case ev.Action == "output":
			if line := strings.TrimSpace(ev.Output); o.firstFail == "" && strings.Contains(line, "_test.go:") {
				o.firstFail = line
			}
			for _, c := range ruleCode.FindAllString(ev.Output, -1) {
				o.codes[strings.Trim(c, "[]")] = true
				if o.first == "" {
					o.first = strings.TrimSpace(ev.Output)
				}
			}
		case ev.Test == top && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			o.action = ev.Action
		}
	}
	cmd.Wait() // a failing test is a result, not an error
	if name == "users" {
		// The proof that the writes went through the fence: the rows carry epochs.
		c, err := pgx.Connect(ctx, plainDSN)
		if err != nil {
			return nil, err
		}
		var stamped, all int64
		err = c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE writer_epoch > 0), count(*) FROM users`).Scan(&stamped, &all)
		c.Close(ctx)
		if err == nil {
			log.Printf("suite: %s: %d of the %d rows left in users carry an epoch sqlfence wrote", dbName, stamped, all)
		}
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("no test ran:\n%s", abbreviate(pkgOut.String(), 4000))
	}
	return res, nil
}

func tally(res map[string]*outcome) string {
	n := map[string]int{}
	for _, o := range res {
		n[o.action]++
	}
	return fmt.Sprintf("%d tests: %d pass, %d fail, %d skip", len(res), n["pass"], n["fail"], n["skip"])
}

// diff prints each test whose outcome differs from the plain run's.
func diff(plain, other map[string]*outcome) {
	var names []string
	for t := range plain {
		names = append(names, t)
	}
	for t := range other {
		if plain[t] == nil {
			names = append(names, t)
		}
	}
	sort.Strings(names)
	same := true
	for _, t := range names {
		p, o := plain[t], other[t]
		pa, oa := "absent", "absent"
		if p != nil {
			pa = p.action
		}
		if o != nil {
			oa = o.action
		}
		if pa == oa {
			continue
		}
		same = false
		var codes []string
		if o != nil {
			for c := range o.codes {
				codes = append(codes, c)
			}
		}
		sort.Strings(codes)
		fmt.Printf("  %-50s %s -> %s %s\n", t, pa, oa, strings.Join(codes, " "))
		if o != nil && o.again {
			fmt.Printf("      (again on a fresh database: it failed in the full run with no rule code)\n")
		}
		switch {
		case o != nil && o.first != "":
			fmt.Printf("      %s\n", abbreviate(o.first, 300))
		case o != nil && o.firstFail != "":
			fmt.Printf("      %s\n", abbreviate(o.firstFail, 300))
		}
	}
	if same {
		fmt.Println("  every test has plain pgx's outcome")
	}
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
