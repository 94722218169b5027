// The catalog snapshot: user routines, built-ins' volatility, triggers, rules and
// foreign-key actions, read in one pass for resolve: catalog.

package pgcatalog

import (
	"encoding/json"
	"fmt"

	"github.com/sqlfence/sqlfence/internal/pgfunc"
)

// Snapshot is what resolve: catalog reads besides the relations of each protected
// table: everything through which a statement can write a protected table without
// naming it. It is plain data; the driver judges it (internal/engine/catalog.go), and the
// sqlfence command reports from the same judgement.
type Snapshot struct {
	// Functions are the user functions, procedures and aggregates: every routine
	// outside pg_catalog and information_schema.
	Functions []Function
	// Builtins is the server's own pg_catalog functions by name, each with the most
	// volatile of its overloads ('i', 's' or 'v'), that the embedded list
	// (pgfunc.Builtin) does not know or knows as less volatile: with it, the more
	// volatile of the two is the server's (BuiltinsSQL).
	Builtins map[string]byte
	// Edges are the ways a write to one relation reaches another: a partitioned or
	// inheritance parent reaches its children, an updatable view its base relations.
	Edges []Edge
	// Columns are the columns named like one of the epoch columns asked for.
	Columns []Column
	// Triggers are the enabled user triggers (not internal: foreign-key triggers are
	// ForeignKeys).
	Triggers []Trigger
	// Rules are the enabled non-SELECT rules outside the system schemas.
	Rules []Rule
	// ForeignKeys are the foreign keys whose ON DELETE or ON UPDATE action writes the
	// referencing rows (CASCADE, SET NULL, SET DEFAULT).
	ForeignKeys []ForeignKey
	// Views are the views with a column named like an epoch column (views.go).
	Views []View
	// Operators are the user operators (operators.go).
	Operators []Operator
	// AttributeCalls say which user functions attribute notation reaches (attributes.go).
	AttributeCalls []AttributeCall
	// MatViews are the materialized views (members.go).
	MatViews []MatView
	// Bound are the user routines the server runs for what a statement touches
	// without naming them (bound.go).
	Bound []Bound
}

// Function is one routine.
type Function struct {
	OID        uint32
	Schema     string
	Name       string
	Kind       string // pg_proc.prokind: f function, p procedure, a aggregate, w window
	Volatility string // pg_proc.provolatile: i, s or v
	Language   string
	// Definition is pg_get_functiondef's CREATE OR REPLACE statement for functions
	// and procedures in sql and plpgsql, "" for the others.
	Definition string
	// Config is pg_proc.proconfig: the routine's SET clauses, "name=value".
	Config []string
	// Calls are the support functions of an aggregate (transition, final, ...).
	Calls []uint32
	// Extension is the name of the extension the routine belongs to, "" for none.
	Extension string
}

// Rel names a relation.
type Rel struct {
	OID    uint32
	Schema string
	Name   string
	Kind   string // pg_class.relkind
}

// Edge says that a write to From reaches the relation To.
type Edge struct {
	From Rel
	To   uint32
	// Kind is 'p' (To is a partition of From), 'i' (an inheritance child) or 'v'
	// (From is an updatable view over To).
	Kind byte
}

// Column is a column named like an epoch column, with its type as format_type spells it.
type Column struct {
	Rel  uint32
	Name string
	Type string
}

// Trigger is one user trigger.
type Trigger struct {
	OID  uint32
	Rel  Rel
	Name string
	// Type is pg_trigger.tgtype: bit 0 row, 1 before, 2 insert, 3 delete, 4 update,
	// 5 truncate, 6 instead.
	Type       int64
	Function   uint32
	FuncSchema string
	FuncName   string
}

// Trigger type bits (pg_trigger.tgtype).
const (
	TriggerRow      = 1 << 0
	TriggerBefore   = 1 << 1
	TriggerInsert   = 1 << 2
	TriggerDelete   = 1 << 3
	TriggerUpdate   = 1 << 4
	TriggerTruncate = 1 << 5
	TriggerInstead  = 1 << 6
)

// Rule is one non-SELECT rewrite rule.
type Rule struct {
	OID  uint32
	Rel  Rel
	Name string
	// Event is pg_rewrite.ev_type: '2' UPDATE, '3' INSERT, '4' DELETE.
	Event   byte
	Instead bool
	// Definition is pg_get_ruledef's CREATE RULE statement.
	Definition string
}

// ForeignKey is a foreign key from Child (conrelid) to Parent (confrelid).
type ForeignKey struct {
	OID    uint32
	Name   string
	Child  Rel
	Parent Rel
	// OnDelete and OnUpdate are confdeltype and confupdtype: a no action, r restrict,
	// c cascade, n set null, d set default.
	OnDelete, OnUpdate byte
}

// userSchema is the condition on a namespace alias that leaves out the system
// schemas, the toast schemas and other sessions' temporary schemas.
func userSchema(ns string) string {
	return ns + `.nspname NOT IN ('pg_catalog', 'information_schema') AND ` + ns + `.nspname NOT LIKE 'pg\_toast%' AND ` + ns + `.nspname NOT LIKE 'pg\_temp\_%'`
}

// FunctionsSQL lists the user routines. Columns: oid, schema, name, prokind,
// provolatile, language, definition (pg_get_functiondef for sql and plpgsql
// functions and procedures, else empty), proconfig as a JSON array, an aggregate's
// support functions as a JSON array of oids.
var FunctionsSQL = `
SELECT p.oid::int8, n.nspname::text, p.proname::text, p.prokind::text, p.provolatile::text, l.lanname::text,
       CASE WHEN p.prokind IN ('f', 'p') AND l.lanname IN ('sql', 'plpgsql') THEN pg_get_functiondef(p.oid) ELSE '' END,
       coalesce(array_to_json(p.proconfig)::text, '[]'),
       coalesce((SELECT json_agg(x::int8)::text FROM unnest(ARRAY[a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
           a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn]::oid[]) x WHERE x <> 0), '[]')
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
WHERE ` + userSchema("n")

// BuiltinsSQL lists the server's pg_catalog functions, with the most volatile of
// each name's overloads, that the embedded list does not know or knows as less
// volatile than one of the server's overloads. $1, $2 and $3 are the list's names of
// at least immutable, stable and volatile volatility (pgfunc.BuiltinsAtLeast, a name
// a line): an overload of volatility x exceeds the list unless its name is among
// those of at least x. A caller that takes, for each name, the more volatile of the
// list's and this answer gets what the whole of pg_proc's pg_catalog says — a
// function the server has and the list lacks (a newer release's, one created in
// pg_catalog), or one altered to be more volatile, is in the answer; the rest cannot
// raise the list's — for a fraction of the rows: 2,646 rows of a stock server became
// none.
//
// Why three lists and not one of "name v" lines joined to pg_proc: on the unnamed
// statement the server folds each string_to_array of a parameter into a constant
// array, and an ANY over a constant array is a hash lookup, so the query is one scan
// of pg_proc (1.7 ms on a new connection; the join needed two sorts, 14 ms).
const BuiltinsSQL = `
SELECT p.proname::text, max(p.provolatile::text) FROM pg_catalog.pg_proc p
WHERE p.pronamespace = 'pg_catalog'::regnamespace
  AND CASE p.provolatile
      WHEN 'i' THEN NOT p.proname::text OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($1::text, E'\n'))
      WHEN 's' THEN NOT p.proname::text OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($2::text, E'\n'))
      ELSE NOT p.proname::text OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($3::text, E'\n')) END
GROUP BY 1`

// BuiltinsArgs are BuiltinsSQL's arguments.
func BuiltinsArgs() []any {
	return []any{pgfunc.BuiltinsAtLeast(pgfunc.Immutable), pgfunc.BuiltinsAtLeast(pgfunc.Stable), pgfunc.BuiltinsAtLeast(pgfunc.Volatile)}
}

// EdgesSQL lists the ways a write to one relation reaches another. Columns: from oid,
// schema, name, relkind, to oid, kind ('p' partition, 'i' inheritance child, 'v'
// base relation of an updatable view).
var EdgesSQL = `
SELECT i.inhparent::int8, pn.nspname::text, pc.relname::text, pc.relkind::text, i.inhrelid::int8,
       CASE WHEN cc.relispartition THEN 'p' ELSE 'i' END
FROM pg_inherits i
JOIN pg_class pc ON pc.oid = i.inhparent
JOIN pg_namespace pn ON pn.oid = pc.relnamespace
JOIN pg_class cc ON cc.oid = i.inhrelid
WHERE ` + userSchema("pn") + `
UNION
SELECT v.oid::int8, v.nspname::text, v.relname::text, v.relkind::text, d.refobjid::int8, 'v'
FROM (
    -- The user's views first (OFFSET 0 keeps the planner from testing the system
    -- views too: pg_relation_is_updatable opens each view it is asked about, which
    -- on a new connection costs milliseconds over the hundred system views).
    SELECT v.oid, vn.nspname, v.relname, v.relkind FROM pg_class v
    JOIN pg_namespace vn ON vn.oid = v.relnamespace
    WHERE v.relkind = 'v' AND ` + userSchema("vn") + `
    OFFSET 0
) v
JOIN pg_rewrite rw ON rw.ev_class = v.oid AND rw.rulename = '_RETURN'
JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
     AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> rw.ev_class
WHERE pg_relation_is_updatable(v.oid, false) & 28 <> 0`

// ColumnsSQL lists the columns of tables and views named like one of the epoch
// columns in $1, a JSON array of names. Columns: relation oid, name, type.
const ColumnsSQL = `
SELECT a.attrelid::int8, a.attname::text, format_type(a.atttypid, a.atttypmod)::text
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE a.attname IN (SELECT jsonb_array_elements_text($1::text::jsonb))
  AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'f', 'v')`

// TriggersSQL lists the enabled user triggers. Columns: oid, relation oid, schema,
// name, relkind, trigger name, tgtype, function oid, function schema, function name.
var TriggersSQL = `
SELECT g.oid::int8, c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, g.tgname::text, g.tgtype::int8,
       p.oid::int8, fn.nspname::text, p.proname::text
FROM pg_trigger g
JOIN pg_class c ON c.oid = g.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_proc p ON p.oid = g.tgfoid
JOIN pg_namespace fn ON fn.oid = p.pronamespace
WHERE NOT g.tgisinternal AND g.tgenabled <> 'D' AND ` + userSchema("n")

// RulesSQL lists the enabled non-SELECT rules. Columns: oid, relation oid, schema,
// name, relkind, rule name, event, INSTEAD, pg_get_ruledef.
var RulesSQL = `
SELECT r.oid::int8, c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, r.rulename::text, r.ev_type::text,
       r.is_instead, pg_get_ruledef(r.oid)
FROM pg_rewrite r
JOIN pg_class c ON c.oid = r.ev_class
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE r.ev_type <> '1' AND r.ev_enabled <> 'D' AND ` + userSchema("n")

// ForeignKeysSQL lists the foreign keys whose ON DELETE or ON UPDATE action writes
// the referencing rows, partitions' copies included. Columns: oid, name, child oid,
// schema, name, relkind, parent oid, schema, name, relkind, confdeltype, confupdtype.
const ForeignKeysSQL = `
SELECT k.oid::int8, k.conname::text,
       cc.oid::int8, cn.nspname::text, cc.relname::text, cc.relkind::text,
       pc.oid::int8, pn.nspname::text, pc.relname::text, pc.relkind::text,
       k.confdeltype::text, k.confupdtype::text
FROM pg_constraint k
JOIN pg_class cc ON cc.oid = k.conrelid
JOIN pg_namespace cn ON cn.oid = cc.relnamespace
JOIN pg_class pc ON pc.oid = k.confrelid
JOIN pg_namespace pn ON pn.oid = pc.relnamespace
WHERE k.contype = 'f' AND (k.confdeltype IN ('c', 'n', 'd') OR k.confupdtype IN ('c', 'n', 'd'))`

// snapshotStep is one query of the snapshot and what its rows add.
type snapshotStep struct {
	what string
	sql  string
	args []any
	n    int
	row  func(s *Snapshot, members map[uint32]string, r *row)
}

// SnapshotReads are the queries of a Snapshot as reads of a catalog read (Reads),
// in order; DecodeSnapshot reads their rows. epochColumns are the policy's epoch
// column names. routines says whether a routine may be in a user schema: where the
// caller knows none is (RoutinesSQL, read in the same snapshot, says so), the bound
// routines are read with BoundViewsSQL, which then returns what BoundSQL would.
func SnapshotReads(epochColumns []string, routines bool) []Read {
	cols, _ := json.Marshal(epochColumns) // a []string always marshals
	steps := snapshotSteps(string(cols))
	out := make([]Read, len(steps))
	for i, st := range steps {
		out[i] = Read{What: st.what, SQL: st.sql, Args: st.args, Columns: st.n}
		if st.sql == BoundSQL && !routines {
			out[i].SQL = BoundViewsSQL
		}
	}
	return out
}

// RoutinesRead is RoutinesSQL as a read: one row, one bool column.
func RoutinesRead() Read { return Read{What: "user routines", SQL: RoutinesSQL, Columns: 1} }

// DecodeSnapshot builds the Snapshot from the rows of SnapshotReads, in their order.
func DecodeSnapshot(rows [][][]any) (*Snapshot, error) {
	steps := snapshotSteps("")
	if len(rows) != len(steps) {
		return nil, fmt.Errorf("pgcatalog: %d answers for the snapshot's %d queries", len(rows), len(steps))
	}
	s := &Snapshot{Builtins: map[string]byte{}}
	members := map[uint32]string{}
	for i, st := range steps {
		for _, vals := range rows[i] {
			r := row{vals: vals}
			if len(vals) != st.n {
				return nil, fmt.Errorf("pgcatalog: the %s query returned %d columns, want %d", st.what, len(vals), st.n)
			}
			st.row(s, members, &r)
			if r.err != nil {
				return nil, fmt.Errorf("pgcatalog: reading %s: %w", st.what, r.err)
			}
		}
	}
	for i := range s.Functions {
		s.Functions[i].Extension = members[s.Functions[i].OID]
	}
	return s, nil
}

func snapshotSteps(cols string) []snapshotStep {
	return []snapshotStep{
		{"functions", FunctionsSQL, nil, 9, func(s *Snapshot, members map[uint32]string, r *row) {
			f := Function{OID: r.oid(0), Schema: r.str(1), Name: r.str(2), Kind: r.str(3), Volatility: r.str(4),
				Language: r.str(5), Definition: r.str(6)}
			r.json(7, &f.Config)
			r.json(8, &f.Calls)
			s.Functions = append(s.Functions, f)
		}},
		{"built-in functions", BuiltinsSQL, BuiltinsArgs(), 2, func(s *Snapshot, members map[uint32]string, r *row) {
			if v := r.str(1); len(v) == 1 {
				s.Builtins[r.str(0)] = v[0]
			}
		}},
		{"relation edges", EdgesSQL, nil, 6, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Edges = append(s.Edges, Edge{From: r.rel(0), To: r.oid(4), Kind: r.char(5)})
		}},
		{"epoch columns", ColumnsSQL, []any{cols}, 3, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Columns = append(s.Columns, Column{Rel: r.oid(0), Name: r.str(1), Type: r.str(2)})
		}},
		{"triggers", TriggersSQL, nil, 10, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Triggers = append(s.Triggers, Trigger{OID: r.oid(0), Rel: r.rel(1), Name: r.str(5), Type: r.int(6),
				Function: r.oid(7), FuncSchema: r.str(8), FuncName: r.str(9)})
		}},
		{"rules", RulesSQL, nil, 9, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Rules = append(s.Rules, Rule{OID: r.oid(0), Rel: r.rel(1), Name: r.str(5), Event: r.char(6),
				Instead: r.bool(7), Definition: r.str(8)})
		}},
		{"foreign keys", ForeignKeysSQL, nil, 12, func(s *Snapshot, members map[uint32]string, r *row) {
			s.ForeignKeys = append(s.ForeignKeys, ForeignKey{OID: r.oid(0), Name: r.str(1), Child: r.rel(2), Parent: r.rel(6),
				OnDelete: r.char(10), OnUpdate: r.char(11)})
		}},
		{"views", ViewsSQL, []any{cols}, 5, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Views = append(s.Views, View{Rel: r.rel(0), Definition: r.str(4)})
		}},
		{"operators", OperatorsSQL, nil, 6, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Operators = append(s.Operators, Operator{OID: r.oid(0), Schema: r.str(1), Name: r.str(2),
				Function: r.oid(3), FuncSchema: r.str(4), FuncName: r.str(5)})
		}},
		{"attribute-notation calls", AttributeCallsSQL, nil, 3, func(s *Snapshot, members map[uint32]string, r *row) {
			s.AttributeCalls = append(s.AttributeCalls, AttributeCall{OID: r.oid(0), Value: r.bool(1), Row: r.bool(2)})
		}},
		{"extension members", ExtensionFunctionsSQL, nil, 2, func(s *Snapshot, members map[uint32]string, r *row) { members[r.oid(0)] = r.str(1) }},
		{"materialized views", MatViewsSQL, nil, 5, func(s *Snapshot, members map[uint32]string, r *row) {
			m := MatView{OID: r.oid(0), Schema: r.str(1), Name: r.str(2), Query: r.str(3)}
			r.json(4, &m.Indexes)
			s.MatViews = append(s.MatViews, m)
		}},
		{"bound routines", BoundSQL, nil, 8, func(s *Snapshot, members map[uint32]string, r *row) {
			s.Bound = append(s.Bound, Bound{Holder: r.char(0), Rel: r.rel(1), What: r.str(5), Name: r.str(6), Function: r.oid(7)})
		}},
	}
}

// row decodes one result row; the first type mismatch is kept in err.
type row struct {
	vals []any
	err  error
}

func (r *row) fail(i int, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("column %d is %T, want %s", i+1, r.vals[i], want)
	}
}

func (r *row) int(i int) int64 {
	v, ok := r.vals[i].(int64)
	if !ok {
		r.fail(i, "int8")
	}
	return v
}

func (r *row) oid(i int) uint32 { return uint32(r.int(i)) }

func (r *row) str(i int) string {
	v, ok := r.vals[i].(string)
	if !ok {
		r.fail(i, "text")
	}
	return v
}

func (r *row) char(i int) byte {
	if s := r.str(i); len(s) == 1 {
		return s[0]
	}
	r.fail(i, "one character")
	return 0
}

func (r *row) bool(i int) bool {
	v, ok := r.vals[i].(bool)
	if !ok {
		r.fail(i, "bool")
	}
	return v
}

func (r *row) json(i int, into any) {
	if err := json.Unmarshal([]byte(r.str(i)), into); err != nil && r.err == nil {
		r.err = fmt.Errorf("column %d: %w", i+1, err)
	}
}

// rel reads four columns from i: oid, schema, name, relkind.
func (r *row) rel(i int) Rel {
	return Rel{OID: r.oid(i), Schema: r.str(i + 1), Name: r.str(i + 2), Kind: r.str(i + 3)}
}
