package sqlfence_test

// The differential check: every statement of the corpus under testdata/corpus runs on
// a real PostgreSQL through sqlfence three times — with a stale epoch, a fresh epoch
// and no epoch — on each of the Exec, Query and Prepare paths, and the test asserts
// on the data, not on the text sqlfence sent:
//
//   - stale (3, below the stored 5): no existing protected row changes or disappears;
//     rows it adds carry epoch 3;
//   - fresh (7): it succeeds, and every protected row it adds or changes carries 7;
//   - none: ErrUnfenced, and nothing changes in any table.
//
// Refusals change nothing under any epoch; pass-through statements succeed under any
// epoch and change no protected row. The corpus format is described at the top of
// testdata/corpus/writes.sql; add a statement by adding an entry to any .sql file there.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

const (
	corpusPolicy = "testdata/corpus/policy.yaml"
	staleEpoch   = 3
	storedEpoch  = 5 // every seeded protected row
	freshEpoch   = 7
)

const corpusSchema = `
CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	note         text,
	writer_epoch bigint NOT NULL DEFAULT 0
);
CREATE SCHEMA other;
CREATE TABLE other.inventory (LIKE inventory INCLUDING ALL);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int PRIMARY KEY, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE reports (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, fence_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE staging (sku text, q int, n text, gone bool NOT NULL DEFAULT false);
CREATE TABLE audit (sku text);
CREATE TABLE "Inventory" (sku text, quantity int);
`

const corpusSeed = `
TRUNCATE inventory, other.inventory, billing.invoices, reports, staging, audit, "Inventory";
INSERT INTO inventory (sku, quantity, note, writer_epoch) VALUES ('a', 10, 'x', 5), ('b', 20, 'y', 5), ('c', 30, NULL, 5);
INSERT INTO other.inventory (sku, quantity, writer_epoch) VALUES ('a', 1, 5);
INSERT INTO billing.invoices (id, total, writer_epoch) VALUES (1, 100, 5), (2, 200, 5);
INSERT INTO reports (id, body, fence_epoch) OVERRIDING SYSTEM VALUE VALUES (1, 'old', 5), (2, 'older', 5);
ALTER TABLE reports ALTER COLUMN id RESTART WITH 100;
INSERT INTO staging (sku, q, n, gone) VALUES ('a', 1, 'n', false), ('b', 0, 'n', true), ('d', 4, 'n', false);
INSERT INTO "Inventory" (sku, quantity) VALUES ('a', 0);
`

// corpusTable is a table the snapshots cover; key "" means no primary key (the rows
// are compared as a multiset).
type corpusTable struct {
	name, key, epochColumn string
}

var corpusTables = []corpusTable{
	{"public.inventory", "sku", "writer_epoch"},
	{"other.inventory", "sku", "writer_epoch"},
	{"billing.invoices", "id", "writer_epoch"},
	{"public.reports", "id", "fence_epoch"},
	{"public.staging", "", ""},
	{"public.audit", "", ""},
	{`public."Inventory"`, "", ""},
}

func (t corpusTable) protected() bool { return t.epochColumn != "" }

// entry is one statement of the corpus.
type entry struct {
	file, name, stmt string
	expect           string // write, refuse, pass
	args             []any
	paths            []string
	noChanges        bool
	bug              string
}

var corpusPaths = []string{"exec", "query", "prepare"}

// corpusSlots bounds the corpus entries running at once.
var corpusSlots = make(chan struct{}, 8)

// loadCorpus reads every .sql file under testdata/corpus.
func loadCorpus(t *testing.T) []entry {
	t.Helper()
	files, _ := filepath.Glob("testdata/corpus/*.sql")
	if len(files) == 0 {
		t.Fatal("no corpus files under testdata/corpus")
	}
	var all []entry
	names := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := parseCorpus(filepath.Base(f), string(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if prev, ok := names[e.name]; ok {
				t.Fatalf("%s: entry %s is also in %s", f, e.name, prev)
			}
			names[e.name] = f
		}
		all = append(all, entries...)
	}
	return all
}

func parseCorpus(file, data string) ([]entry, error) {
	var (
		out  []entry
		cur  *entry
		body []string
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		cur.stmt = strings.Trim(strings.Join(body, "\n"), "\n")
		switch {
		case strings.TrimSpace(cur.stmt) == "":
			return fmt.Errorf("%s: entry %s has no statement", file, cur.name)
		case !slices.Contains([]string{"write", "refuse", "pass"}, cur.expect):
			return fmt.Errorf("%s: entry %s: expect must be write, refuse or pass, not %q", file, cur.name, cur.expect)
		}
		out = append(out, *cur)
		return nil
	}
	for i, line := range strings.Split(data, "\n") {
		directive, ok := strings.CutPrefix(line, "--! ")
		if !ok {
			if cur != nil {
				body = append(body, line)
			}
			continue
		}
		key, value, _ := strings.Cut(directive, ":")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "name" {
			if err := finish(); err != nil {
				return nil, err
			}
			cur, body = &entry{file: file, name: value, paths: corpusPaths}, nil
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: directive %q before the first --! name:", file, i+1, key)
		}
		switch key {
		case "expect":
			cur.expect = value
		case "args":
			args, err := decodeArgs(value)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: args: %v", file, i+1, err)
			}
			cur.args = args
		case "paths":
			cur.paths = nil
			for _, p := range strings.Split(value, ",") {
				if p = strings.TrimSpace(p); !slices.Contains(corpusPaths, p) {
					return nil, fmt.Errorf("%s:%d: unknown path %q", file, i+1, p)
				}
				cur.paths = append(cur.paths, strings.TrimSpace(p))
			}
		case "changes":
			if value != "none" {
				return nil, fmt.Errorf("%s:%d: changes: only none is known", file, i+1)
			}
			cur.noChanges = true
		case "bug":
			cur.bug = value
		default:
			return nil, fmt.Errorf("%s:%d: unknown directive %q", file, i+1, key)
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeArgs reads a JSON array; integers become int64, which pgx binds to any
// integer or numeric parameter.
func decodeArgs(s string) ([]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw []any
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	for i, v := range raw {
		if n, ok := v.(json.Number); ok {
			if k, err := n.Int64(); err == nil {
				raw[i] = k
			} else if f, err := n.Float64(); err == nil {
				raw[i] = f
			} else {
				return nil, err
			}
		}
	}
	return raw, nil
}

// TestCorpusFormat keeps the corpus loadable without a database, so a malformed entry
// fails even where PostgreSQL is not installed.
func TestCorpusFormat(t *testing.T) {
	entries := loadCorpus(t)
	kinds := map[string]int{}
	for _, e := range entries {
		kinds[e.expect]++
	}
	if len(entries) < 30 || kinds["write"] == 0 || kinds["refuse"] == 0 || kinds["pass"] == 0 {
		t.Fatalf("corpus has %d entries (%v)", len(entries), kinds)
	}
	// Each entry's expectation agrees with what sqlfence plans for it, unless it is a
	// known bug.
	p, err := sqlfence.LoadPolicy(corpusPolicy)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.bug != "" {
			continue
		}
		plan := p.Plan(e.stmt)
		var got string
		switch {
		case plan.Err != nil && errors.Is(plan.Err, sqlfence.ErrRefused):
			got = "refuse"
		case plan.Err != nil:
			got = "error: " + plan.Err.Error()
		case plan.Fenced != "":
			got = "write"
		default:
			got = "pass"
		}
		if got != e.expect {
			t.Errorf("%s/%s: sqlfence plans %s, the corpus expects %s (%v)", e.file, e.name, got, e.expect, plan.Err)
		}
	}
}

// snapshot holds every row of every table: for keyed tables key → row as JSON, for
// the others row JSON → count.
type snapshot map[string]map[string]string

func takeSnapshot(t *testing.T, db *sql.DB) snapshot {
	t.Helper()
	s := snapshot{}
	for _, tb := range corpusTables {
		rows := map[string]string{}
		q := fmt.Sprintf(`SELECT to_jsonb(t)::text FROM %s t`, tb.name)
		if tb.key != "" {
			q = fmt.Sprintf(`SELECT t.%s::text, to_jsonb(t)::text FROM %s t`, tb.key, tb.name)
		}
		res, err := db.Query(q)
		if err != nil {
			t.Fatalf("snapshot %s: %v", tb.name, err)
		}
		for res.Next() {
			var k, v string
			if tb.key != "" {
				err = res.Scan(&k, &v)
			} else {
				err = res.Scan(&k)
				n, _ := strconv.Atoi(rows[k])
				v = strconv.Itoa(n + 1)
			}
			if err != nil {
				t.Fatal(err)
			}
			rows[k] = v
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		res.Close()
		s[tb.name] = rows
	}
	return s
}

func rowEpoch(row, column string) (int64, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(row), &m); err != nil {
		return 0, err
	}
	var e int64
	if err := json.Unmarshal(m[column], &e); err != nil {
		return 0, fmt.Errorf("epoch column %s of %s: %v", column, row, err)
	}
	return e, nil
}

// corpusDSN adds the corpus policy to a DSN in URL or keyword/value form.
func corpusDSN(dsn string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " " + sqlfence.PolicyParam + "=" + corpusPolicy
	case strings.Contains(dsn, "?"):
		return dsn + "&" + sqlfence.PolicyParam + "=" + corpusPolicy
	}
	return dsn + "?" + sqlfence.PolicyParam + "=" + corpusPolicy
}

// runCorpus executes the statement on one path; the error is the statement's, or
// rows.Err() for the Query path.
func runCorpus(ctx context.Context, db *sql.DB, path, stmt string, args []any) error {
	switch path {
	case "exec":
		_, err := db.ExecContext(ctx, stmt, args...)
		return err
	case "query":
		rows, err := db.QueryContext(ctx, stmt, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
		return err
	default:
		st, err := db.PrepareContext(context.Background(), stmt)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.ExecContext(ctx, args...)
		return err
	}
}

func TestDifferentialCorpus(t *testing.T) {
	t.Parallel()
	for _, e := range loadCorpus(t) {
		t.Run(strings.TrimSuffix(e.file, ".sql")+"/"+e.name, func(t *testing.T) {
			t.Parallel()
			if e.bug != "" {
				t.Skip("bug: " + e.bug)
			}
			// A database and two pools per entry: bound how many are open at once,
			// whatever -parallel is, to stay well inside the server's max_connections.
			corpusSlots <- struct{}{}
			t.Cleanup(func() { <-corpusSlots })
			dsn, raw := newRawDB(t, corpusSchema)
			fenced, err := sql.Open("sqlfence", corpusDSN(dsn))
			if err != nil {
				t.Fatal(err)
			}
			defer fenced.Close()
			raw.SetMaxOpenConns(2)
			fenced.SetMaxOpenConns(2)
			for _, path := range e.paths {
				for _, run := range []struct {
					name  string
					ctx   context.Context
					epoch int64
				}{
					{"stale", sqlfence.WithEpoch(context.Background(), staleEpoch), staleEpoch},
					{"fresh", sqlfence.WithEpoch(context.Background(), freshEpoch), freshEpoch},
					{"none", context.Background(), 0},
				} {
					t.Run(path+"/"+run.name, func(t *testing.T) {
						if _, err := raw.Exec(corpusSeed); err != nil {
							t.Fatal(err)
						}
						before := takeSnapshot(t, raw)
						err := runCorpus(run.ctx, fenced, path, e.stmt, e.args)
						after := takeSnapshot(t, raw)
						checkRun(t, e, run.name, run.epoch, err, before, after)
					})
				}
			}
		})
	}
}

func checkRun(t *testing.T, e entry, run string, epoch int64, err error, before, after snapshot) {
	t.Helper()
	unchanged := func(protectedOnly bool) {
		t.Helper()
		for _, tb := range corpusTables {
			if protectedOnly && !tb.protected() {
				continue
			}
			if !maps.Equal(before[tb.name], after[tb.name]) {
				t.Errorf("%s changed:\nbefore %v\nafter  %v", tb.name, before[tb.name], after[tb.name])
			}
		}
	}
	switch e.expect {
	case "refuse":
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Fatalf("err = %v, want ErrRefused", err)
		}
		unchanged(false)
		return
	case "pass":
		if err != nil {
			t.Fatalf("err = %v, want the statement sent and run", err)
		}
		unchanged(true)
		return
	}
	switch run {
	case "none":
		if !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
		}
		unchanged(false)
		return
	case "stale":
		if err != nil && !errors.Is(err, sqlfence.ErrFenced) && !errors.Is(err, sqlfence.ErrAlreadyWritten) {
			t.Fatalf("stale epoch: err = %v, want nil or ErrFenced", err)
		}
	case "fresh":
		if err != nil {
			t.Fatalf("fresh epoch: %v", err)
		}
	}
	changes := 0
	for _, tb := range corpusTables {
		if !tb.protected() {
			continue
		}
		b, a := before[tb.name], after[tb.name]
		for k, row := range b {
			now, ok := a[k]
			switch {
			case run == "stale" && !ok:
				t.Errorf("stale epoch deleted %s row %s: %s", tb.name, k, row)
			case run == "stale" && now != row:
				t.Errorf("stale epoch changed %s row %s:\nbefore %s\nafter  %s", tb.name, k, row, now)
			case !ok || now != row:
				changes++
			}
		}
		for k, row := range a {
			if old, ok := b[k]; ok && old == row {
				continue
			}
			if _, ok := b[k]; !ok {
				changes++
			}
			got, err := rowEpoch(row, tb.epochColumn)
			if err != nil {
				t.Fatal(err)
			}
			if got != epoch {
				t.Errorf("%s epoch: %s row %s carries epoch %d, want %d: %s", run, tb.name, k, got, epoch, row)
			}
		}
	}
	if run == "fresh" && changes == 0 && !e.noChanges {
		t.Errorf("the fresh write changed no protected row; the entry should change something (or say changes: none)")
	}
}

// TestCorpusParse checks the corpus parser on the format's corners.
func TestCorpusParse(t *testing.T) {
	const file = `-- header comment, ignored
--! name: one
--! expect: write
--! args: ["a", 1, 2.5, null, true]

-- a comment that belongs to the statement
UPDATE inventory SET quantity = $2 -- trailing
;;

--! name: two
--! expect: pass
--! paths: exec, query
--! changes: none
SELECT 1
`
	got, err := parseCorpus("x.sql", file)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d entries", len(got))
	}
	if want := "-- a comment that belongs to the statement\nUPDATE inventory SET quantity = $2 -- trailing\n;;"; got[0].stmt != want {
		t.Errorf("statement %q, want %q", got[0].stmt, want)
	}
	if fmt.Sprintf("%#v", got[0].args) != fmt.Sprintf("%#v", []any{"a", int64(1), 2.5, nil, true}) {
		t.Errorf("args %#v", got[0].args)
	}
	if !slices.Equal(got[0].paths, corpusPaths) || !slices.Equal(got[1].paths, []string{"exec", "query"}) || !got[1].noChanges {
		t.Errorf("directives: %+v", got)
	}
	for _, bad := range []string{
		"--! expect: write\n",
		"--! name: x\n--! expect: maybe\nSELECT 1\n",
		"--! name: x\n--! expect: pass\n",
		"--! name: x\n--! expect: pass\n--! colour: red\nSELECT 1\n",
		"--! name: x\n--! expect: pass\n--! args: [1,\nSELECT 1\n",
	} {
		if _, err := parseCorpus("bad.sql", bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

// TestStandardConformingStringsOff: with standard_conforming_strings off (a SET on the
// session, or a role or database default), PostgreSQL reads a backslash in a plain
// string literal as an escape, while sqlfence's parser reads it as a character. The
// same text is then two different statements: sqlfence sees one SELECT of two string
// literals, PostgreSQL a SELECT, an unfenced DELETE and a comment. No protected row
// may change, whatever sqlfence does with the statement.
func TestStandardConformingStringsOff(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, corpusSchema+corpusSeed)
	fenced, err := sql.Open("sqlfence", corpusDSN(dsn))
	if err != nil {
		t.Fatal(err)
	}
	defer fenced.Close()
	ctx := context.Background()
	conn, err := fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := takeSnapshot(t, raw)
	const stmt = `SELECT 'a\' , ' ; DELETE FROM inventory; -- '`
	_, setErr := conn.ExecContext(ctx, `SET standard_conforming_strings = off`)
	_, err = conn.ExecContext(ctx, stmt) // no arguments: pgx sends it with the simple protocol
	after := takeSnapshot(t, raw)
	if !maps.Equal(before["public.inventory"], after["public.inventory"]) {
		t.Fatalf("after SET standard_conforming_strings = off (err %v), %q passed through sqlfence (err %v) and PostgreSQL ran an unfenced DELETE: inventory %v -> %v",
			setErr, stmt, err, before["public.inventory"], after["public.inventory"])
	}
}
