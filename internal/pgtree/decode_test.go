package pgtree

import (
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestDecodeAgrees holds the generated decoder (decode_gen.go) to proto.Unmarshal
// over every statement of the repository's SQL corpora, and over every truncation of
// their encodings: the same tree, positions included, where proto.Unmarshal reads
// one; no tree where it fails.
func TestDecodeAgrees(t *testing.T) {
	stmts := corpusStatements(t)
	decoded, truncated := 0, 0
	for _, stmt := range stmts {
		enc, err := pgquery.ParseToProtobuf(stmt)
		if err != nil {
			continue
		}
		for cut := len(enc); cut >= 0; cut-- {
			if cut < len(enc) && len(stmt) > 2000 {
				break // the corpus files whole: their own encoding only
			}
			part := enc[:cut]
			want := &pg.ParseResult{}
			werr := proto.Unmarshal(part, want)
			got, gerr := decodeTree(part)
			switch {
			case gerr != nil && werr == nil:
				t.Fatalf("%q: %v; proto.Unmarshal reads it", stmt, gerr)
			case gerr == nil && werr != nil:
				t.Fatalf("%q cut at %d: decoded; proto.Unmarshal: %v", stmt, cut, werr)
			case gerr == nil && !proto.Equal(got, want):
				t.Fatalf("%q cut at %d: the trees differ", stmt, cut)
			}
			if cut == len(enc) {
				decoded++
			} else if gerr == nil {
				truncated++
			}
		}
	}
	if decoded < 500 {
		t.Fatalf("only %d statements decoded", decoded)
	}
	t.Logf("%d statements, %d truncations decoded alike", decoded, truncated)
}

// TestDecodeRefuses: what proto.Unmarshal would keep as an unknown field or merge,
// and a string that is not UTF-8, decode to no tree.
func TestDecodeRefuses(t *testing.T) {
	enc, err := pgquery.ParseToProtobuf("SELECT 'x' FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeTree(enc); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"unknown field":       append(append([]byte{}, enc...), 0xf8, 0x01, 0x01), // field 31, varint 1
		"statement list bent": append(append([]byte{}, enc...), 0x10, 0x01),       // field 2 (stmts) as a varint
		"not UTF-8":           append([]byte{}, enc...),
	} {
		if name == "not UTF-8" {
			i := indexOf(bad, []byte{0x0a, 0x01, 'x'}) // String.sval = "x"
			if i < 0 {
				t.Fatal("no literal in the encoding")
			}
			bad[i+2] = 0xff
			if proto.Unmarshal(bad, &pg.ParseResult{}) == nil {
				t.Fatal("proto.Unmarshal reads a string that is not UTF-8")
			}
		}
		if _, err := decodeTree(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func indexOf(b, sub []byte) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}
