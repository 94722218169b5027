package sqlfence_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deployRun is what one process of internal/benchdeploy prints.
type deployRun struct {
	TotalNS int64 `json:"total_ns"`
	FirstNS int64 `json:"first_ns"`
}

// BenchmarkDeployProcess is a deploy as it happens: a new process per run. It builds
// internal/benchdeploy once, then each op starts two processes against the same
// PostgreSQL, one after the other (which goes first alternates): one opens a fresh
// sqlfence pool, the other a fresh raw pgx pool, and each runs BenchmarkColdPools'
// catalogue of 300 distinct statements once. Nothing is shared between runs but the
// server: no process-wide cache of sqlfence's (parser, decisions, catalog) survives
// from one run to the next, as none survives a deploy. The raw side sends each
// statement as sqlfence does (Plan), with the epoch as its argument.
//
//	go test -run '^$' -bench DeployProcess -benchtime 20x -count 3 .
//
// Sub-benchmarks: the benchmarks' policy (catalog_refresh: 1h: the first read takes
// the fingerprint too) and the same with catalog_refresh: 1s. throughput-ratio is raw
// time ÷ sqlfence time from opening the pool to the last statement's end;
// after-first-ratio the same without the first statement (connecting, and on
// sqlfence's side reading the catalog); extra-ms/first is sqlfence's first statement
// over raw's; wall-ratio is each process's whole life (start, package init, exit)
// raw ÷ sqlfence. SQLFENCE_DEPLOY_PROFILE=DIR writes a CPU profile of each sqlfence
// run there (go tool pprof -top DIR/*.prof).
func BenchmarkDeployProcess(b *testing.B) {
	dsn, policyPath, p := benchDatabase(b)
	bin := filepath.Join(b.TempDir(), "benchdeploy")
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skipf("no go command to build internal/benchdeploy: %v", err)
	}
	build := exec.Command(goBin, "build", "-o", bin, "./internal/benchdeploy")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./internal/benchdeploy: %v\n%s", err, out)
	}
	queries, kinds := coldCatalogue()
	type statement struct {
		SQL, Raw string
		Read     bool
		Fenced   bool
		ID       int
	}
	stmts := make([]statement, len(queries))
	for i, q := range queries {
		s := statement{SQL: q, Raw: q, Read: kinds[i] == coldRead, ID: 1 + i%64}
		if kinds[i] == coldFenced {
			plan := p.Plan(q)
			if plan.Err != nil || plan.Fenced == "" {
				b.Fatalf("%s: not fenced (%v)", q, plan.Err)
			}
			s.Raw, s.Fenced = plan.Fenced, true
		}
		stmts[i] = s
	}
	work := filepath.Join(b.TempDir(), "work.json")
	data, err := json.Marshal(stmts)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(work, data, 0o644); err != nil {
		b.Fatal(err)
	}
	policy, err := os.ReadFile(policyPath)
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct{ name, refresh string }{{"refresh-1h", "1h"}, {"refresh-1s", "1s"}} {
		path := filepath.Join(b.TempDir(), v.name+".yaml")
		text := strings.Replace(string(policy), "catalog_refresh: 1h", "catalog_refresh: "+v.refresh, 1)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		fencedDSN := withParam(dsn, "sqlfence_policy", path)
		b.Run(v.name, func(b *testing.B) {
			var total, first, wall [2]time.Duration // [sqlfence, raw]
			profiles := 0
			start := func(side int) {
				args := []string{"-side", "sqlfence", "-dsn", fencedDSN, "-work", work}
				if side == 1 {
					args = []string{"-side", "raw", "-dsn", dsn, "-work", work}
				} else if dir := os.Getenv("SQLFENCE_DEPLOY_PROFILE"); dir != "" {
					profiles++
					args = append(args, "-cpuprofile", filepath.Join(dir, fmt.Sprintf("%s-%d.prof", v.name, profiles)))
				}
				var out, stderr bytes.Buffer
				cmd := exec.Command(bin, args...)
				cmd.Stdout, cmd.Stderr = &out, &stderr
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatalf("benchdeploy %v: %v\n%s", args[:2], err, stderr.Bytes())
				}
				wall[side] += time.Since(t0)
				var r deployRun
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					b.Fatalf("benchdeploy printed %q: %v", out.Bytes(), err)
				}
				total[side] += time.Duration(r.TotalNS)
				first[side] += time.Duration(r.FirstNS)
			}
			for n := range b.N {
				start(n % 2)
				start(1 - n%2)
			}
			nf := float64(b.N)
			b.ReportMetric(float64(total[1])/float64(total[0]), "throughput-ratio")
			b.ReportMetric(float64(total[1]-first[1])/float64(total[0]-first[0]), "after-first-ratio")
			b.ReportMetric(float64(first[0]-first[1])/nf/1e6, "extra-ms/first")
			b.ReportMetric(float64(wall[1])/float64(wall[0]), "wall-ratio")
			b.ReportMetric(float64(total[0])/nf/1e6, "sqlfence-ms/deploy")
			b.ReportMetric(float64(total[1])/nf/1e6, "raw-ms/deploy")
		})
	}
}
