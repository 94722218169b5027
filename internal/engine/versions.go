// Server versions: the parser reads PostgreSQL 17's grammar, the server may be older.
// An older grammar differs from the parser's in its keywords: a word that became a
// keyword later is an identifier there — json_object(5) a call of whatever function
// json_object the search path finds, not the SQL/JSON constructor, nor the
// pg_catalog function the newer grammar names — and a word that became a
// column-name keyword later, and so cannot name a function any more, is a function
// name there when a parenthesis follows. A text holding such a word is read again
// as that server reads it — the word quoted, which makes the parser read the same
// identifier — and where the two trees differ, the statement is decided as the
// older server reads it, or refused (SF706) where the older server does not read it
// at all. The keywords come from PostgreSQL's own list (pg_get_keywords()) of each
// version, not from the constructs that use them: versions_test.go compares
// grammarKeywords with the servers it finds.

package engine

import (
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// ParserVersion is the server_version_num of the grammar pg_query parses.
const ParserVersion = 170000

// keywordChange is when a word of the parser's grammar became what it is there.
type keywordChange struct {
	// keyword: the first version whose grammar has the word as a keyword; before
	// it, the word is an identifier wherever it appears.
	keyword int
	// notFunc: the first version where it is a column-name (or reserved) keyword,
	// which cannot name a function; from keyword to here it was an unreserved
	// keyword, which can, so "word (" is a function call there. 0: it is unreserved
	// in the parser's grammar too.
	notFunc int
}

// grammarKeywords are the words whose keyword category in pg_get_keywords() differs
// between PostgreSQL 15, 16 and 17 (the parser's): none was removed or became less
// reserved, and only json changed category (unreserved in 16, a column-name keyword
// in 17, where JSON(…) is the JSON constructor). Versions before 15 are not
// supported; 18 adds only unreserved keywords, which read as the parser reads them
// wherever the parser accepts the text.
var grammarKeywords = map[string]keywordChange{
	// 16: SQL/JSON constructors, IS JSON, SYSTEM_USER.
	"absent": {160000, 0}, "format": {160000, 0}, "indent": {160000, 0}, "keys": {160000, 0}, "scalar": {160000, 0},
	"json":       {160000, 170000},
	"json_array": {160000, 160000}, "json_arrayagg": {160000, 160000}, "json_object": {160000, 160000},
	"json_objectagg": {160000, 160000}, "system_user": {160000, 160000},
	// 17: SQL/JSON query functions, JSON_TABLE, MERGE's merge_action().
	"conditional": {170000, 0}, "empty": {170000, 0}, "error": {170000, 0}, "keep": {170000, 0}, "nested": {170000, 0},
	"omit": {170000, 0}, "path": {170000, 0}, "plan": {170000, 0}, "quotes": {170000, 0}, "source": {170000, 0},
	"string": {170000, 0}, "target": {170000, 0}, "unconditional": {170000, 0},
	"json_exists": {170000, 170000}, "json_query": {170000, 170000}, "json_scalar": {170000, 170000},
	"json_serialize": {170000, 170000}, "json_table": {170000, 170000}, "json_value": {170000, 170000},
	"merge_action": {170000, 170000},
}

// grammarRanges are the server versions whose grammars differ from the parser's in
// different words: each range is read as its oldest version's grammar reads it.
var grammarRanges = []struct{ from, below int }{{0, 160000}, {160000, 170000}}

// olderReading is how servers of versions from..below read a text whose tree there
// differs from the parser's: d is the decision for that reading.
type olderReading struct {
	from, below int
	d           *Decision
}

// asOlderServer returns sql as a server of version server reads it, in the parser's
// grammar: each word that is no keyword there quoted, and each that names a function
// there quoted where a parenthesis follows; and the words quoted (upper case). sql
// itself when there is none.
func asOlderServer(sql string, toks []pgtree.Token, server int) (string, []string) {
	var b strings.Builder
	var words []string
	last := 0
	for i, t := range toks {
		word := strings.ToLower(sql[t.Start:t.End])
		k, ok := grammarKeywords[word]
		if !ok || server >= k.keyword && (k.notFunc == 0 || server >= k.notFunc ||
			i+1 >= len(toks) || sql[toks[i+1].Start:toks[i+1].End] != "(") {
			continue
		}
		b.WriteString(sql[last:t.Start])
		b.WriteString(`"` + word + `"`)
		last = int(t.End)
		if w := strings.ToUpper(word); !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	if last == 0 {
		return sql, nil
	}
	b.WriteString(sql[last:])
	return b.String(), words
}

// olderReadings decides sql as each range of older servers reads it, where that
// reading's tree differs from the parser's; nil where every server reads it alike.
func olderReadings(policy *Policy, sql string, toks []pgtree.Token, cc *ClaimCheck) []olderReading {
	var out []olderReading
	var tree *pg.ParseResult
	for _, r := range grammarRanges {
		text, words := asOlderServer(sql, toks, r.from)
		if words == nil {
			continue
		}
		if tree == nil {
			t, err := pgtree.Parse(sql, pgtree.Limit)
			if err != nil {
				return nil // refused as it is
			}
			tree = withoutLocations(t)
		}
		old, err := pgtree.Parse(text, pgtree.OutputLimit)
		if err == nil && proto.Equal(withoutLocations(old), tree) {
			continue
		}
		var d *Decision
		if err == nil {
			d, _ = analyzeText(policy, text, nil, cc, false)
			d.reading = text
		}
		if d == nil || d.act == ActRefuse && d.refusal.Code == rulecode.ParseError {
			d = &Decision{act: ActRefuse, refusal: olderRefusal(words, r.from, r.below)}
		}
		out = append(out, olderReading{from: r.from, below: r.below, d: d})
	}
	return out
}

// withoutLocations returns t with every location (and statement length) zeroed: two
// texts whose trees are equal then are the same statement.
func withoutLocations(t *pg.ParseResult) *pg.ParseResult {
	var clear func(m protoreflect.Message)
	clear = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Kind() == protoreflect.Int32Kind && (fd.Name() == "location" || fd.Name() == "stmt_location" || fd.Name() == "stmt_len"):
				m.Clear(fd)
			case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
				l := v.List()
				for i := 0; i < l.Len(); i++ {
					clear(l.Get(i).Message())
				}
			case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
				clear(v.Message())
			}
			return true
		})
	}
	clear(t.ProtoReflect())
	return t
}

// olderRefusal is the refusal for a text servers from..below do not read at all as
// the parser reads it.
func olderRefusal(words []string, from, below int) *Error {
	have := "PostgreSQL before " + strconv.Itoa(below/10000)
	if from > 0 {
		have = "PostgreSQL " + strconv.Itoa(from/10000)
	}
	return refuse(rulecode.ServerVersion, nil,
		strings.Join(words, ", ")+" "+plural(len(words), "is a keyword", "are keywords")+" of sqlfence's parser (PostgreSQL 17's grammar) that "+have+
			" reads as "+plural(len(words), "an identifier", "identifiers")+" (a function name where a parenthesis follows), so this connection's server reads the statement otherwise than sqlfence, or not at all",
		"use the construct on PostgreSQL "+strconv.Itoa(below/10000)+" or later, or call the json/jsonb built-ins (json_build_object, jsonb_path_query, …)")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ServerVersionNum reads the server_version a server reports ("16.4", "15.10 (Debian
// 15.10-1.pgdg120+1)", "18beta1") as server_version_num (160004, 150010, 180000);
// 0 when it cannot be read.
func ServerVersionNum(s string) int {
	s = strings.TrimSpace(s)
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end >= 0 {
		s = s[:end]
	}
	major, minor, _ := strings.Cut(s, ".")
	ma, err := strconv.Atoi(major)
	if err != nil || ma < 10 {
		return 0 // before 10 the numbering had three parts; such servers are not supported
	}
	mi, _ := strconv.Atoi(minor)
	return ma*10000 + mi
}

// OnServer returns d as it holds on a server of version server (server_version_num;
// 0 = unknown): d itself when that server reads the statement as the parser did,
// else the decision for that server's reading.
//
// On an unknown server the statement must hold whichever reading the server makes:
// where every reading passes, the text goes as it is; where the oldest reading is
// refused, so is the statement; where it is fenced, its text goes, since a text
// whose newer keywords are all quoted reads alike on every server; otherwise it is
// refused (SF706).
func (d *Decision) OnServer(server int) *Decision {
	if len(d.older) == 0 || server >= ParserVersion {
		return d
	}
	if server > 0 {
		for _, o := range d.older {
			if server >= o.from && server < o.below {
				return o.d
			}
		}
		return d
	}
	oldest := d.older[0]
	if oldest.from > 0 {
		oldest.d = d // the oldest servers read it as the parser does
	}
	allPass := d.act == ActPass
	for _, o := range d.older {
		allPass = allPass && o.d.act == ActPass
	}
	switch {
	case allPass:
		return d
	case oldest.d.act == ActRefuse, oldest.d.act == ActRewrite && oldest.from == 0:
		return oldest.d
	}
	return &Decision{act: ActRefuse, refusal: refuse(rulecode.ServerVersion, d.refusalTable(),
		"servers before PostgreSQL "+strconv.Itoa(d.older[len(d.older)-1].below/10000)+" read the statement otherwise than sqlfence's parser (PostgreSQL 17's grammar) — a word that is a keyword to the parser is an identifier or a function name there — and this connection's server version is not known",
		"connect through pgx (the registered driver \"sqlfence\", or sqlfence.NewConnector over pgx's stdlib connector), which reports the server's version; or write the statement without the newer keyword")}
}

// refusalTable is the first table d writes, for a refusal's message; nil for none.
func (d *Decision) refusalTable() *Table {
	if len(d.tables) == 0 {
		return nil
	}
	return d.tables[0]
}
