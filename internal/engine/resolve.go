// resolve: catalog, the reading: the relations a protected table can also be written
// through, its epoch column's type, and the snapshot of routines, triggers, rules and
// keys the analysis judges from (catalog.go).

package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Resolve reads, through query, what the policy's names cannot say: the partitions,
// inheritance children, parents and updatable views through which a protected table
// can also be written, whether each epoch column is one the fence can work with, and
// the snapshot the analysis judges the rest from — user functions, triggers, rules,
// foreign-key actions (catalog.go). It returns the policy extended with those
// relations and that snapshot.
func Resolve(ctx context.Context, query Querier, p *Policy) (*Policy, error) {
	var digest catalogDigest
	var extra []Table
	seen := map[QualifiedName]bool{}
	for _, t := range p.Tables {
		seen[t.QualifiedName] = true
	}
	protected := map[uint32]*Table{}
	chk := &policyCheck{ctx: ctx, query: query, source: p.Source}
	// The version first, in a statement of its own: it waits for the DDL in flight,
	// and a snapshot taken after it can only be newer (version.go).
	ver, err := pgcatalog.Version(ctx, digesting(query, &digest))
	if err != nil {
		return nil, chk.readError("reading the catalog version", err)
	}
	var columns []string
	for _, t := range p.Tables {
		if !slices.Contains(columns, t.EpochColumn) {
			columns = append(columns, t.EpochColumn)
		}
	}
	reads, at := catalogReads(p, ver, columns)
	rows, err := reads.Run(ctx, query)
	if err != nil {
		return nil, chk.readError("reading the catalog", err)
	}
	if at.routines >= 0 {
		// The version's statement saw no user routine, so the bound routines were
		// read in their short form, which answers for the full one only while none
		// is there; one created since is in this snapshot: read again in full.
		some, err := pgcatalog.Bool("user routines", rows[at.routines])
		if err != nil {
			return nil, chk.readError("reading the catalog", err)
		}
		if some {
			ver.Routines = true
			reads, at = catalogReads(p, ver, columns)
			if rows, err = reads.Run(ctx, query); err != nil {
				return nil, chk.readError("reading the catalog", err)
			}
		}
	}
	for i := range reads.Len() {
		if i != at.fingerprint {
			r := reads.At(i)
			digest.add(r.SQL, r.Args, rows[i])
		}
	}
	// Where catalog_refresh will read the catalog again, its fingerprint, in the
	// snapshot of the rest: a later fingerprint equal to it means nothing this read
	// saw has changed (pgcatalog.Fingerprint). Left out of the digest, which is of
	// what the rest read.
	var fingerprint string
	if at.fingerprint >= 0 {
		fingerprint, _ = pgcatalog.FingerprintOf(rows[at.fingerprint]) // "": the first period reads it all
	}
	for i := range p.Tables {
		t := &p.Tables[i]
		rels, err := pgcatalog.DecodeRelations(rows[at.tables[i]])
		if err != nil {
			return nil, chk.readError("reading "+t.QualifiedName.String(), err)
		}
		if len(rels) == 0 {
			if err := chk.missing("table", t.QualifiedName, t.Line); err != nil {
				return nil, err
			}
			continue
		}
		if err := chk.ambiguous(t.QualifiedName, t.Line, rels); err != nil {
			return nil, err
		}
		col := sqlident.Quote(t.EpochColumn)
		for _, r := range rels {
			if protected[r.OID] == nil {
				protected[r.OID] = t
			}
			rel := QualifiedName{Schema: r.Schema, Name: r.Name}
			target := sqlident.QuoteQualified(r.Schema, r.Name)
			if r.EpochType == "" && r.IsView() {
				// A view that does not show the epoch column cannot carry the fence.
				if !seen[rel] {
					seen[rel] = true
					extra = append(extra, Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode, Stale: t.Stale,
						unfenceable: "the view " + target + " writes the protected table " + t.QualifiedName.String() + " but has no " + col + " column"})
				}
				continue
			}
			if !chk.epochColumn(t.QualifiedName, t.Line, r, t.EpochColumn) {
				continue
			}
			if !seen[rel] && !(t.Schema == "" && rel.Name == t.Name) {
				seen[rel] = true
				nt := Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode, Stale: t.Stale, Line: t.Line}
				if r.IsView() {
					nt.base = t.Name
				}
				extra = append(extra, nt)
			}
		}
	}
	for i, c := range p.Claims {
		rels, err := pgcatalog.DecodeRelations(rows[at.claims[i]])
		if err != nil {
			return nil, chk.readError("reading the claim table "+c.QualifiedName.String(), err)
		}
		if len(rels) == 0 {
			if err := chk.missing("claim table", c.QualifiedName, c.Line); err != nil {
				return nil, err
			}
			continue
		}
		if err := chk.ambiguous(c.QualifiedName, c.Line, rels); err != nil {
			return nil, err
		}
		for _, r := range rels {
			if r.Depth == 0 && !r.IsView() {
				chk.epochColumn(c.QualifiedName, c.Line, r, c.EpochColumn)
			}
		}
	}
	if len(chk.problems) > 0 {
		return nil, &CatalogError{Source: p.Source, Problems: chk.problems}
	}
	var unguarded, uncarried []string
	if at.unguarded >= 0 {
		if unguarded, err = pgcatalog.Strings("unguarded relations", rows[at.unguarded]); err != nil {
			return nil, chk.readError("reading the guard's triggers", err)
		}
	}
	if at.uncarried >= 0 {
		if uncarried, err = pgcatalog.Strings("relations without the guard's row trigger", rows[at.uncarried]); err != nil {
			return nil, chk.readError("reading the guard's row triggers", err)
		}
	}
	missing := catalogMissing(ver, unguarded)
	snap, err := pgcatalog.DecodeSnapshot(rows[at.snapshot:])
	if err != nil {
		return nil, chk.readError("reading the snapshot", err)
	}
	base := p.withTables(extra)
	base.CarryMissing = carryMissing(ver, missing, uncarried)
	base.GuardCarries = base.CarryMissing == ""
	r := base.withSnapshot(snap, protected)
	r.CatalogMissing = missing
	r.CatalogRead = ver
	if missing == "" {
		r.CatalogVersion = ver.Version
	}
	r.digest = digest
	r.CatalogFingerprint = fingerprint
	return r, nil
}

// readsAt says where each part of the catalog read is among its reads; -1 for a
// part not read.
type readsAt struct {
	fingerprint int
	tables      []int // by p.Tables
	claims      []int // by p.Claims
	unguarded   int
	uncarried   int
	routines    int // whether a user routine is in the snapshot, where the bound routines are read short
	snapshot    int // the first of the snapshot's, which come last
}

// catalogReads are the queries of the catalog read after the version, sent as one
// statement (pgcatalog.Reads): the fingerprint where catalog_refresh will compare
// it, the relations of every protected and claim table, the guard's triggers on
// the protected ones where the guard compares versions, whether a user routine is
// there where the version's statement saw none, and the snapshot.
func catalogReads(p *Policy, ver pgcatalog.CatalogVersion, columns []string) (*pgcatalog.Reads, readsAt) {
	var reads pgcatalog.Reads
	at := readsAt{fingerprint: -1, unguarded: -1, uncarried: -1, routines: -1}
	if p.CatalogRefresh > 0 && !ver.Installed() {
		at.fingerprint = reads.Add(pgcatalog.FingerprintRead())
	}
	var oids []string
	for _, t := range p.Tables {
		i := reads.Add(pgcatalog.RelationsRead(t.Schema, t.Name, t.EpochColumn))
		at.tables = append(at.tables, i)
		oids = append(oids, "SELECT c1::pg_catalog.oid FROM "+reads.Ref(i))
	}
	for _, c := range p.Claims {
		at.claims = append(at.claims, reads.Add(pgcatalog.RelationsRead(c.Schema, c.Name, c.EpochColumn)))
	}
	// catalogMissing and carryMissing ask about the guard's triggers only here.
	if ver.Version != 0 && ver.Triggers && ver.Guard && len(oids) > 0 {
		from := strings.Join(oids, " UNION ALL ")
		at.unguarded = reads.Add(pgcatalog.UnguardedRead(from))
		if ver.Carries {
			at.uncarried = reads.Add(pgcatalog.UncarriedRead(from))
		}
	}
	if !ver.Routines {
		at.routines = reads.Add(pgcatalog.RoutinesRead())
	}
	at.snapshot = reads.Len()
	for _, r := range pgcatalog.SnapshotReads(columns, ver.Routines) {
		reads.Add(r)
	}
	return &reads, at
}

// catalogMissing says what keeps DDL of other sessions from reaching the fence:
// no catalog version, a disabled event trigger, an older guard, or a protected
// relation without the guard's trigger (unguarded, where the version is compared).
// "" when nothing does.
func catalogMissing(ver pgcatalog.CatalogVersion, unguarded []string) string {
	switch {
	case ver.Version == 0:
		return "the database has no catalog version (schema sqlfence, installed with the guard)"
	case !ver.Triggers:
		return "sqlfence's event triggers (sqlfence_catalog_ddl, sqlfence_catalog_drop) are missing, disabled, or not enabled always (a trigger enabled plainly does not fire for DDL made with session_replication_role = replica)"
	case !ver.Guard:
		return "the guard installed is older than this sqlfence and does not compare catalog versions"
	case len(unguarded) > 0:
		return "the guard is not on " + strings.Join(unguarded, ", ") + " (a table, partition or child created after it was installed), or its trigger sqlfence_guard there is disabled or not enabled always"
	}
	return ""
}

// carryMissing says what keeps the guard from fencing the writes the server makes
// on a fenced statement's behalf (carry.go): no catalog version checked on every
// protected relation (missing), an older guard, or a protected relation without the
// guard's row trigger (uncarried). "" when nothing does.
func carryMissing(ver pgcatalog.CatalogVersion, missing string, uncarried []string) string {
	switch {
	case ver.Version == 0 && !ver.Guard:
		return "the guard is not installed"
	case missing != "":
		return missing
	case !ver.Carries:
		return "the guard installed is older than this sqlfence and does not fence them: re-run sqlfence guard --apply"
	case len(uncarried) > 0:
		return "the guard's row trigger is not on " + strings.Join(uncarried, ", ") + " (created after the guard was installed: re-run sqlfence guard --apply)"
	}
	return ""
}

// Findings are what the catalog holds that makes the engine refuse writes whose text
// does not show why (what `sqlfence guard` reports).
func (p *Policy) Findings() []CatalogFinding {
	if p.catalog == nil {
		return nil
	}
	return slices.Clone(p.catalog.findings)
}
