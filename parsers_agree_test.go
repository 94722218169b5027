//go:build cgo

package sqlfence_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
	cparser "github.com/pganalyze/pg_query_go/v6/parser"
	wparser "github.com/wasilibs/go-pgquery/parser"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// TestParsersAgree: the two builds of libpg_query sqlfence can parse with
// (internal/pgtree/pgquery: pg_query_go under cgo, go-pgquery's WebAssembly build
// without) give the same tokens, the same tree, the same PL/pgSQL tree and the same
// deparsed SQL for every statement of the corpora, the attack suites, the benign
// corpus and the rewrite goldens (their inputs and what the driver sends). A cgo
// build links both, so the trees are compared in one process; .ci/run's
// CGO_ENABLED=0 pass then runs the engine's and the driver's tests on the
// WebAssembly build alone.
//
// Texts past pgtree's bound are left out: sqlfence never hands them to either parser.
func TestParsersAgree(t *testing.T) {
	texts := map[string]string{} // text → where it comes from
	add := func(where, text string) {
		if strings.TrimSpace(text) != "" {
			texts[text] = where
		}
	}
	for _, c := range loadAttacks(t) {
		add("attack "+c.id()+" setup", c.setup)
		for _, s := range c.steps {
			add("attack "+c.id(), s.sql)
			add("attack "+c.id()+" rewrite", s.rewriteTo)
		}
	}
	for _, f := range loadBenign(t) {
		add("benign "+f.name+" setup", f.setup)
		for _, s := range f.stmts {
			add("benign "+f.name+"/"+s.name, s.sql)
		}
	}
	for _, e := range loadCorpus(t) {
		add("corpus "+e.file+"/"+e.name, e.stmt)
	}
	for _, dir := range []string{"testdata/rewrite", "testdata/rewrite_claim"} {
		files, _ := filepath.Glob(dir + "/*.sql")
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, out, _ := strings.Cut(string(data), "\n---- sent ----\n")
			add(f, in)
			if out = strings.TrimSpace(out); out != "PASS" && !strings.HasPrefix(out, "REFUSED") {
				add(f+" (sent)", out)
			}
		}
	}
	if len(texts) < 500 {
		t.Fatalf("only %d texts: have the corpora moved?", len(texts))
	}
	compared := 0
	for text, where := range texts {
		ctoks, cerr := cparser.ScanToProtobuf(text)
		wtoks, werr := wparser.ScanToProtobuf(text)
		if !sameError(cerr, werr) || string(ctoks) != string(wtoks) {
			t.Errorf("%s: the scanners differ: %v / %v\n%s", where, cerr, werr, text)
			continue
		}
		if cerr != nil {
			continue
		}
		toks, err := pgtree.ScanTokens(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, berr := pgtree.MeasureTokens(text, toks, false, pgtree.OutputLimit); berr != nil {
			continue
		}
		compared++
		ctree, cerr := parseWith(cparser.ParseToProtobuf, text)
		wtree, werr := parseWith(wparser.ParseToProtobuf, text)
		if !sameError(cerr, werr) {
			t.Errorf("%s: the parsers differ: %v / %v\n%s", where, cerr, werr, text)
			continue
		}
		if cerr != nil {
			continue
		}
		// Deparse: each build deparses its own tree, as the engine would.
		cout, cerr := deparseWith(cparser.DeparseFromProtobuf, ctree)
		wout, werr := deparseWith(wparser.DeparseFromProtobuf, wtree)
		if !sameError(cerr, werr) || cout != wout {
			t.Errorf("%s: deparse differs: %q, %v / %q, %v", where, cout, cerr, wout, werr)
		}
		knownDifferences(ctree.ProtoReflect())
		if !proto.Equal(ctree, wtree) {
			t.Errorf("%s: the trees differ\n%s", where, text)
			continue
		}
		if strings.Contains(strings.ToLower(text), "plpgsql") {
			cj, cerr := cparser.ParsePlPgSqlToJSON(text)
			wj, werr := wparser.ParsePlPgSqlToJSON(text)
			if !sameError(cerr, werr) || cj != wj {
				t.Errorf("%s: the PL/pgSQL trees differ: %v / %v\n%s", where, cerr, werr, text)
			}
		}
	}
	t.Logf("%d texts, %d within the bound compared", len(texts), compared)
}

func parseWith(parse func(string) ([]byte, error), text string) (*pg.ParseResult, error) {
	out, err := parse(text)
	if err != nil {
		return nil, err
	}
	tree := &pg.ParseResult{}
	return tree, proto.Unmarshal(out, tree)
}

func deparseWith(deparse func([]byte) (string, error), tree *pg.ParseResult) (string, error) {
	in, err := proto.Marshal(tree)
	if err != nil {
		return "", err
	}
	return deparse(in)
}

func sameError(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || a.Error() == b.Error()
}

// knownDifferences rewrites cgo's tree where the WebAssembly build is known to
// differ in what sqlfence never reads:
//   - the four locations libpg_query 17-6.2.5 added (where a string constant of
//     DefElem, NOTIFY and CREATE/ALTER SUBSCRIPTION starts), which the WebAssembly
//     build, on 17-6.2.2, does not fill in;
//   - FETCH/MOVE ALL's count, the C type long's largest value, which is 64 bits
//     under cgo and 32 bits in WebAssembly.
func knownDifferences(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "arg_location" || fd.Name() == "payload_location" || fd.Name() == "conninfo_location":
			m.Clear(fd)
		case fd.Name() == "how_many" && v.Int() == math.MaxInt64:
			m.Set(fd, protoreflect.ValueOfInt64(math.MaxInt32))
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				knownDifferences(l.Get(i).Message())
			}
		case fd.IsMap():
		case fd.Message() != nil:
			knownDifferences(v.Message())
		}
		return true
	})
}
