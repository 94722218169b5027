// Command pgxsuite runs pgx's own database/sql tests (the stdlib package's, of the
// pgx version sqlfence's go.mod names) against PostgreSQL twice — plain, and through
// sqlfence with a policy that protects one table the tests never touch — and prints
// the tests whose outcome differs.
//
//	cd contrib/pgxsuite && go run .
//
// Nothing of pgx is kept in this repository: the tests are copied from the module
// cache into a temporary module with one file of this program's (harness.go.txt)
// and three textual substitutions: stdlib.OpenDB → suiteOpenDB, sql.Open("pgx", →
// sql.Open(suiteDriverName(),, and driverConn.(*stdlib.Conn) → suiteStdlibConn(driverConn)
// (inside sql.Conn.Raw: sqlfence.RawConn under sqlfence.Unfenced). A throwaway
// PostgreSQL (internal/pgcluster) serves a fresh database per run.
package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

//go:embed harness.go.txt
var harness []byte

const policy = `version: 1
resolve: catalog
ddl: allow
unfenced: allow
catalog_refresh: 1h
tables:
  - name: sqlfence_unrelated
`

func main() {
	ctx := context.Background()
	root, err := goList("-m", "-f", "{{.Dir}}", "github.com/sqlfence/sqlfence")
	if err != nil {
		log.Fatal(err)
	}
	pgxDir, err := goList("-m", "-f", "{{.Dir}}", "github.com/jackc/pgx/v5")
	if err != nil {
		log.Fatal(err)
	}
	pgxVersion, _ := goList("-m", "-f", "{{.Version}}", "github.com/jackc/pgx/v5")
	work, err := os.MkdirTemp("", "sqlfence-pgx-suite-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	if err := prepare(work, root, filepath.Join(pgxDir, "stdlib"), pgxVersion); err != nil {
		log.Fatal(err)
	}
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Stop()
	plain, err := runSuite(ctx, cluster, work, "plain")
	if err != nil {
		log.Fatal(err)
	}
	fenced, err := runSuite(ctx, cluster, work, "sqlfence")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pgx %s stdlib tests (tests and subtests):\n  plain    %s\n  sqlfence %s\n\nsqlfence against plain pgx:\n", pgxVersion, tally(plain), tally(fenced))
	var names []string
	for t := range plain {
		names = append(names, t)
	}
	for t := range fenced {
		if _, ok := plain[t]; !ok {
			names = append(names, t)
		}
	}
	sort.Strings(names)
	same := true
	for _, t := range names {
		if p, f := plain[t], fenced[t]; p.action != f.action {
			same = false
			fmt.Printf("  %-60s %s -> %s\n      %s\n", t, p.action, f.action, f.output)
		}
	}
	if same {
		fmt.Println("  every test has plain pgx's outcome")
	}
}

func goList(args ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("pgxsuite: go list %s (run from contrib/pgxsuite): %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func prepare(work, root, stdlibDir, pgxVersion string) error {
	files, err := filepath.Glob(filepath.Join(stdlibDir, "*_test.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		text := string(b)
		if !strings.Contains(text, "package stdlib_test") {
			continue // the package's internal tests test unexported code
		}
		text = strings.NewReplacer(
			"stdlib.OpenDB(", "suiteOpenDB(",
			`sql.Open("pgx",`, "sql.Open(suiteDriverName(),",
			"driverConn.(*stdlib.Conn)", "suiteStdlibConn(driverConn)",
		).Replace(text)
		if err := os.WriteFile(filepath.Join(work, filepath.Base(f)), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(work, "zz_sqlfence_harness_test.go"), harness, 0o644); err != nil {
		return err
	}
	mod := "module pgxsuite\n\ngo 1.26\n\nrequire (\n\tgithub.com/jackc/pgx/v5 " + pgxVersion +
		"\n\tgithub.com/sqlfence/sqlfence v0.0.0-00010101000000-000000000000\n)\n\nreplace github.com/sqlfence/sqlfence => " + root + "\n"
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir, cmd.Stderr = work, os.Stderr
	return cmd.Run()
}

type outcome struct{ action, output string }

func runSuite(ctx context.Context, cluster *pgcluster.Cluster, work, name string) (map[string]*outcome, error) {
	db := "pgx_" + name
	admin, err := pgx.Connect(ctx, cluster.DSN())
	if err != nil {
		return nil, err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	admin.Close(ctx)
	if err != nil {
		return nil, err
	}
	dsn := strings.Replace(cluster.DSN(), "/postgres?", "/"+db+"?", 1)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	_, err = c.Exec(ctx, `CREATE TABLE sqlfence_unrelated (id int PRIMARY KEY, writer_epoch bigint NOT NULL DEFAULT 0)`)
	c.Close(ctx)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(work, "sqlfence.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-timeout=20m", ".")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PGX_TEST_DATABASE="+dsn, "SQLFENCE_SUITE="+name, "SQLFENCE_POLICY="+path)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	res := map[string]*outcome{}
	var pkgOut strings.Builder
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
		o := res[ev.Test]
		if o == nil {
			o = &outcome{}
			res[ev.Test] = o
		}
		switch ev.Action {
		case "output":
			if s := strings.TrimSpace(ev.Output); o.output == "" && strings.Contains(s, ".go:") {
				o.output = s
			}
		case "pass", "fail", "skip":
			o.action = ev.Action
		}
	}
	cmd.Wait()
	if len(res) == 0 {
		return nil, fmt.Errorf("pgxsuite: %s: no test ran:\n%s", name, pkgOut.String())
	}
	return res, nil
}

func tally(res map[string]*outcome) string {
	n := map[string]int{}
	for _, o := range res {
		n[o.action]++
	}
	return fmt.Sprintf("%d: %d pass, %d fail, %d skip", len(res), n["pass"], n["fail"], n["skip"])
}
