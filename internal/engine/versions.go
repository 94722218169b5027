// Server versions: the parser reads PostgreSQL 17's grammar, the server may be older.
// Constructs the newer grammar reads as nodes of their own are, on an older server,
// plain function calls, where a user function of that name runs: a decision holds
// only on servers whose grammar reads the construct as the parser does.

package engine

import (
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

// versionedNodes are the parse nodes whose meaning depends on the server's version:
// from version min on the server parses them as the parser does; before it, the same
// text is a call of a function named like the construct (json_object(…), json(…),
// merge_action()), or a syntax error.
var versionedNodes = map[protoreflect.FullName]struct {
	min  int
	what string
}{
	(&pg.JsonObjectConstructor{}).ProtoReflect().Descriptor().FullName():     {160000, "JSON_OBJECT(…)"},
	(&pg.JsonArrayConstructor{}).ProtoReflect().Descriptor().FullName():      {160000, "JSON_ARRAY(…)"},
	(&pg.JsonArrayQueryConstructor{}).ProtoReflect().Descriptor().FullName(): {160000, "JSON_ARRAY(query)"},
	(&pg.JsonObjectAgg{}).ProtoReflect().Descriptor().FullName():             {160000, "JSON_OBJECTAGG(…)"},
	(&pg.JsonArrayAgg{}).ProtoReflect().Descriptor().FullName():              {160000, "JSON_ARRAYAGG(…)"},
	(&pg.JsonIsPredicate{}).ProtoReflect().Descriptor().FullName():           {160000, "IS JSON"},
	(&pg.JsonParseExpr{}).ProtoReflect().Descriptor().FullName():             {170000, "JSON(…)"},
	(&pg.JsonScalarExpr{}).ProtoReflect().Descriptor().FullName():            {170000, "JSON_SCALAR(…)"},
	(&pg.JsonSerializeExpr{}).ProtoReflect().Descriptor().FullName():         {170000, "JSON_SERIALIZE(…)"},
	(&pg.JsonFuncExpr{}).ProtoReflect().Descriptor().FullName():              {170000, "JSON_QUERY, JSON_VALUE or JSON_EXISTS"},
	(&pg.JsonTable{}).ProtoReflect().Descriptor().FullName():                 {170000, "JSON_TABLE"},
	(&pg.MergeSupportFunc{}).ProtoReflect().Descriptor().FullName():          {170000, "merge_action()"},
}

// versionedToken reports the keywords every versioned node starts with or contains:
// a statement without one of them needs no walk.
func versionedToken(k pg.Token) bool {
	switch k {
	case pg.Token_JSON, pg.Token_JSON_ARRAY, pg.Token_JSON_ARRAYAGG, pg.Token_JSON_EXISTS, pg.Token_JSON_OBJECT,
		pg.Token_JSON_OBJECTAGG, pg.Token_JSON_QUERY, pg.Token_JSON_SCALAR, pg.Token_JSON_SERIALIZE,
		pg.Token_JSON_TABLE, pg.Token_JSON_VALUE, pg.Token_MERGE_ACTION:
		return true
	}
	return false
}

// serverNeeds returns the lowest server version on which tree means what the parser
// read, and the construct that needs it (0, "" for any version).
func serverNeeds(toks []pgtree.Token, tree *pg.ParseResult) (int, string) {
	found := false
	for _, t := range toks {
		if versionedToken(t.Kind) {
			found = true
			break
		}
	}
	if !found {
		return 0, ""
	}
	min, what := 0, ""
	for _, s := range tree.Stmts {
		pgtree.WalkNodes(s, func(m proto.Message) bool {
			if v, ok := versionedNodes[m.ProtoReflect().Descriptor().FullName()]; ok && v.min > min {
				min, what = v.min, v.what
			}
			return true
		})
	}
	return min, what
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
// 0 = unknown, judged as the oldest): d itself when that server reads the statement
// as the parser did, else a refusal.
func (d *Decision) OnServer(server int) *Decision {
	if d.minServer == 0 || server >= d.minServer {
		return d
	}
	have := "a server whose version sqlfence could not read"
	if server > 0 {
		have = "PostgreSQL " + strconv.Itoa(server/10000) + "." + strconv.Itoa(server%10000)
	}
	need := strconv.Itoa(d.minServer / 10000)
	return &Decision{act: ActRefuse, refusal: refuse(rulecode.ServerVersion, nil,
		d.minWhat+" is read by sqlfence's parser (PostgreSQL 17's grammar) as PostgreSQL "+need+
			" and later read it, but this connection's server is "+have+", which reads the same text as a call of a function of that name (a user function of that name would run unjudged)",
		"use the construct on PostgreSQL "+need+" or later, or call the json/jsonb built-ins (json_build_object, jsonb_path_query, …)")}
}
