// The code the server runs for a statement that does not name it: the user routines
// the catalog binds to a relation or a type — column defaults and generated columns,
// CHECK and exclusion constraints, index and partition-key expressions, a trigger's
// WHEN condition, row-level security policies, a view's query, a domain's
// constraints and default, a cast's function — read from pg_depend, where the server
// records every routine and operator a stored expression uses. (The actions of a
// rule other than a view's are judged from its definition, catalog_hazards.go.)

package pgcatalog

import "strings"

// Bound is one user routine the server runs on its own for what a statement touches.
type Bound struct {
	// Holder says when the server runs it:
	//   BoundWrite  an INSERT or UPDATE of Rel (COPY FROM and MERGE included);
	//   BoundRead   any statement that names Rel (a view's query, a policy);
	//   BoundType   any value converted to the type Rel names (a domain, a cast's target);
	//   BoundCall   a call of the routine Rel.OID (a domain among its argument or result
	//               types; a routine its arguments' defaults call, which a call that
	//               leaves the argument out runs);
	//   BoundAny    any statement (an implicit cast, which needs no name in the text; a
	//               support routine of a type or an operator family, which the server
	//               runs for a value of the type wherever it appears: sorting, grouping,
	//               an index, the planner's estimates, binary output);
	//   BoundDDL    any DDL statement (an event trigger; Rel.Name is its name).
	// BoundView rows are no routine: Function is a relation the view Rel reads, or a
	// child of the parent Rel (what a read of Rel reaches).
	Holder byte
	// Rel is the relation, the type (Kind is then pg_type.typtype) or the routine
	// (BoundCall: only OID is set).
	Rel Rel
	// What and Name say which object binds it: "column default" and the column,
	// "check constraint" and its name, "cast" and "(int AS zp)", …
	What, Name string
	Function   uint32
}

// Bound holders.
const (
	BoundWrite byte = 'w'
	BoundRead  byte = 'r'
	BoundType  byte = 't'
	BoundCall  byte = 'f'
	BoundAny   byte = 'a'
	BoundView  byte = 'v'
	BoundDDL   byte = 'e'
)

// BoundSQL lists the bound routines. Columns: holder, oid, schema, name, kind, what,
// name, function oid.
//
// fn is every user routine a stored expression of a catalog object depends on (an
// operator stands for its function); pg_depend records them all, and a built-in is
// pinned and never listed. The domains a relation's columns have — directly, as an
// array's element, a composite's field or a domain's base, at any depth — check and
// default its values on every INSERT and UPDATE, as do assignment casts to a column's
// type; an implicit cast may run anywhere. A conversion to a type runs the domains and
// casts it holds (holds): those of a domain's base, an array's element, a composite's
// or a table row type's fields, a range's subtype, at any depth. An extended
// statistics object's expressions run in ANALYZE alone. The planner folds the IMMUTABLE
// calls with constant arguments of a relation's index expressions and predicates, its
// partition key, its extended statistics and (constraint exclusion) its CHECK constraints when it plans any
// statement that reads the relation or a parent of it: those are read-bound too, and
// a parent reads its children (pg_inherits) as a view reads its relations. The support routines of types and
// operator families written in C are an extension's, taken like built-ins (only a
// superuser installs them); those in a readable language are judged. A routine in
// schema sqlfence is judged like any other (a migration can create one there): only
// the guard's own event triggers are left out (they move the catalog version).
var BoundSQL = `
WITH RECURSIVE fn (classid, objid, fid) AS (
    SELECT d.classid, d.objid, coalesce(o.oprcode, d.refobjid)
    FROM pg_depend d
    LEFT JOIN pg_operator o ON d.refclassid = 'pg_operator'::regclass AND o.oid = d.refobjid
    WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass) AND d.deptype = 'n'
      AND d.classid IN ('pg_attrdef'::regclass, 'pg_constraint'::regclass, 'pg_class'::regclass, 'pg_policy'::regclass,
                        'pg_rewrite'::regclass, 'pg_type'::regclass, 'pg_trigger'::regclass, 'pg_statistic_ext'::regclass,
                        'pg_proc'::regclass)
), ufn (classid, objid, fid) AS (
    SELECT fn.classid, fn.objid, fn.fid FROM fn
    JOIN pg_proc p ON p.oid = fn.fid JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE ` + userSchema("n") + `
), domfn (typ, fid) AS (
    SELECT k.contypid, u.fid FROM ufn u JOIN pg_constraint k ON u.classid = 'pg_constraint'::regclass AND k.oid = u.objid AND k.contypid <> 0
    UNION SELECT u.objid, u.fid FROM ufn u JOIN pg_type t ON u.classid = 'pg_type'::regclass AND t.oid = u.objid AND t.typtype = 'd'
), casts (target, label, context, fid) AS (
    SELECT k.casttarget, '(' || format_type(k.castsource, NULL) || ' AS ' || format_type(k.casttarget, NULL) || ')', k.castcontext::text, k.castfunc
    FROM pg_cast k JOIN pg_proc p ON p.oid = k.castfunc JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE ` + userSchema("n") + `
), edge (inr, outr) AS (
    SELECT t.typbasetype, t.oid FROM pg_type t WHERE t.typbasetype >= 16384
    UNION ALL SELECT t.typelem, t.oid FROM pg_type t WHERE t.typelem >= 16384
    UNION ALL SELECT a.atttypid, c.reltype FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE a.atttypid >= 16384 AND a.attnum > 0 AND NOT a.attisdropped AND c.reltype <> 0
    UNION ALL SELECT r.rngsubtype, r.rngtypid FROM pg_range r WHERE r.rngsubtype >= 16384
    UNION ALL SELECT r.rngtypid, r.rngmultitypid FROM pg_range r WHERE r.rngtypid >= 16384
), holds (typ, dom) AS (
    SELECT f.typ, f.typ FROM domfn f
    UNION SELECT k.target, k.target FROM casts k
    UNION SELECT e.outr, h.dom FROM holds h JOIN edge e ON e.inr = h.typ
), coltype (rel, typ) AS (
    SELECT a.attrelid, a.atttypid FROM pg_attribute a WHERE a.attnum > 0 AND NOT a.attisdropped AND a.atttypid >= 16384
    UNION
    SELECT c.rel, x.typ FROM coltype c JOIN pg_type t ON t.oid = c.typ
    CROSS JOIN LATERAL (SELECT t.typbasetype UNION ALL SELECT t.typelem
        UNION ALL SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = t.oid
        UNION ALL SELECT r.rngtypid FROM pg_range r WHERE r.rngmultitypid = t.oid) x (typ)
    WHERE x.typ >= 16384
), support (typ, what, name, fid) AS (
    SELECT u.objid, 'type', '', u.fid FROM ufn u JOIN pg_type t ON u.classid = 'pg_type'::regclass AND t.oid = u.objid AND t.typtype <> 'd'
    UNION
    SELECT x.typ, 'operator family', f.opfname::text, x.fid FROM pg_opfamily f
    JOIN (SELECT a.amprocfamily, a.amproclefttype, a.amproc FROM pg_amproc a
          UNION SELECT a.amopfamily, a.amoplefttype, o.oprcode FROM pg_amop a JOIN pg_operator o ON o.oid = a.amopopr) x (fam, typ, fid) ON x.fam = f.oid
), usupport (typ, what, name, fid) AS (
    SELECT s.typ, s.what, s.name, s.fid FROM support s
    JOIN pg_proc p ON p.oid = s.fid JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
    WHERE ` + userSchema("n") + ` AND l.lanname NOT IN ('c', 'internal')
), bound (holder, rel, what, name, fid) AS (
    SELECT 'w', d.adrelid, CASE WHEN a.attgenerated <> '' THEN 'generated column' ELSE 'column default' END, a.attname::text, u.fid
    FROM ufn u JOIN pg_attrdef d ON u.classid = 'pg_attrdef'::regclass AND d.oid = u.objid
    JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
    UNION ALL
    SELECT 'w', k.conrelid, CASE k.contype WHEN 'c' THEN 'check constraint' ELSE 'constraint' END, k.conname::text, u.fid
    FROM ufn u JOIN pg_constraint k ON u.classid = 'pg_constraint'::regclass AND k.oid = u.objid AND k.conrelid <> 0
    UNION ALL
    SELECT 'w', i.indrelid, 'index', ic.relname::text, u.fid
    FROM ufn u JOIN pg_index i ON u.classid = 'pg_class'::regclass AND i.indexrelid = u.objid JOIN pg_class ic ON ic.oid = i.indexrelid
    UNION ALL
    SELECT 'w', u.objid, 'partition key', '', u.fid
    FROM ufn u JOIN pg_class c ON u.classid = 'pg_class'::regclass AND c.oid = u.objid AND c.relkind = 'p'
    UNION ALL
    SELECT 'w', s.stxrelid, 'statistics', s.stxname::text, u.fid
    FROM ufn u JOIN pg_statistic_ext s ON u.classid = 'pg_statistic_ext'::regclass AND s.oid = u.objid
    UNION ALL
    SELECT 'w', g.tgrelid, 'trigger condition', g.tgname::text, u.fid
    FROM ufn u JOIN pg_trigger g ON u.classid = 'pg_trigger'::regclass AND g.oid = u.objid AND g.tgfoid <> u.fid AND g.tgenabled <> 'D'
    UNION ALL
    SELECT 'w', c.rel, 'domain', format_type(c.typ, NULL), f.fid FROM coltype c JOIN domfn f ON f.typ = c.typ
    UNION ALL
    SELECT 'w', c.rel, 'cast', k.label, k.fid FROM coltype c JOIN casts k ON k.target = c.typ AND k.context IN ('a', 'i')
    UNION ALL
    SELECT 'r', r.ev_class, 'view', '', u.fid
    FROM ufn u JOIN pg_rewrite r ON u.classid = 'pg_rewrite'::regclass AND r.oid = u.objid AND r.rulename = '_RETURN'
    UNION ALL
    SELECT 'r', p.polrelid, 'policy', p.polname::text, u.fid
    FROM ufn u JOIN pg_policy p ON u.classid = 'pg_policy'::regclass AND p.oid = u.objid
    JOIN pg_class c ON c.oid = p.polrelid AND c.relrowsecurity
    UNION ALL
` + boundViews + `
), planned (holder, rel, what, name, fid) AS (
    SELECT * FROM bound
    UNION ALL
    SELECT 'r', b.rel, b.what, b.name, b.fid FROM bound b WHERE b.holder = 'w' AND b.what IN ('index', 'partition key', 'check constraint', 'statistics')
)
SELECT DISTINCT b.holder, c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, b.what, b.name, b.fid::int8
FROM planned b ` + boundRelations + `
UNION ALL
SELECT DISTINCT 't', t.oid::int8, n.nspname::text, t.typname::text, t.typtype::text, 'domain',
       CASE WHEN h.typ = h.dom THEN '' ELSE format_type(h.dom, NULL) END, f.fid::int8
FROM holds h JOIN domfn f ON f.typ = h.dom JOIN pg_type t ON t.oid = h.typ JOIN pg_namespace n ON n.oid = t.typnamespace
UNION ALL
SELECT DISTINCT 't', t.oid::int8, n.nspname::text, t.typname::text, t.typtype::text, 'cast', k.label, k.fid::int8
FROM holds h JOIN casts k ON k.target = h.dom JOIN pg_type t ON t.oid = h.typ JOIN pg_namespace n ON n.oid = t.typnamespace
UNION ALL
SELECT 'a', t.oid::int8, n.nspname::text, t.typname::text, t.typtype::text, 'cast', k.label, k.fid::int8
FROM casts k JOIN pg_type t ON t.oid = k.target JOIN pg_namespace n ON n.oid = t.typnamespace WHERE k.context = 'i'
UNION ALL
SELECT DISTINCT 'a', t.oid::int8, n.nspname::text, t.typname::text, t.typtype::text, s.what, s.name, s.fid::int8
FROM usupport s JOIN pg_type t ON t.oid = s.typ JOIN pg_namespace n ON n.oid = t.typnamespace
UNION ALL
SELECT DISTINCT 'f', p.oid::int8, '', '', '', 'domain', format_type(h.dom, NULL), f.fid::int8
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
CROSS JOIN LATERAL pg_catalog.unnest(p.proargtypes::oid[] || p.prorettype || coalesce(p.proallargtypes, '{}')) x (typ)
JOIN holds h ON h.typ = x.typ
JOIN domfn f ON f.typ = h.dom
WHERE ` + userSchema("n") + `
UNION ALL
SELECT DISTINCT 'f', u.objid::int8, '', '', '', 'argument default', '', u.fid::int8 FROM ufn u WHERE u.classid = 'pg_proc'::regclass
UNION ALL
SELECT 'e', e.oid::int8, '', e.evtname::text, '', 'event trigger', e.evtname::text, e.evtfoid::int8
FROM pg_event_trigger e JOIN pg_proc p ON p.oid = e.evtfoid JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE e.evtenabled <> 'D' AND ` + userSchema("n") + `
  AND NOT (n.nspname = 'sqlfence' AND e.evtname IN ('` + strings.Join(GuardEventTriggers, "', '") + `'))`

// boundViews are the BoundView rows: the relations a view's query reads (its
// _RETURN rule's dependencies) and the children of a parent.
const boundViews = `    SELECT 'v', r.ev_class, 'view', '', d.refobjid
    FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
         AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> r.ev_class AND d.deptype = 'n'
    WHERE r.rulename = '_RETURN'
    UNION ALL
    SELECT 'v', i.inhparent, 'inherits', '', i.inhrelid FROM pg_inherits i`

// boundRelations names the relation of each row of the relation holders and keeps
// those in user schemas.
var boundRelations = `JOIN pg_class c ON c.oid = b.rel JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE ` + userSchema("n")

// BoundViewsSQL is BoundSQL where no routine is in a user schema: then it returns the
// same rows, and costs a fraction (on a new server connection, whose catalog caches
// are cold, BoundSQL is the dearest query of the read). Every other row of BoundSQL
// names a user routine: fn and ufn, and so domfn, the bound rows but the views' and
// the argument defaults, come from pg_depend rows joined to pg_proc in a user schema;
// casts and usupport join their function to pg_proc in a user schema; the call rows
// are of user routines; an event trigger's function is in a user schema. With no such
// routine those are empty, and what is left is the views' and the children's rows,
// which planned passes on and the final SELECT names and filters as here.
// RoutinesSQL says, in the read's own snapshot, whether a routine is there.
var BoundViewsSQL = `
WITH bound (holder, rel, what, name, fid) AS (
` + boundViews + `
)
SELECT DISTINCT b.holder, c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, b.what, b.name, b.fid::int8
FROM bound b ` + boundRelations

// RoutinesSQL returns one row: whether a routine (function, procedure, aggregate)
// is in a user schema; where none is, BoundViewsSQL answers for BoundSQL. Its
// catalogs are named with their schema: the catalog version's statement holds it
// too, and runs on sessions of every kind.
var RoutinesSQL = `
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE ` + userSchema("n") + `)`
