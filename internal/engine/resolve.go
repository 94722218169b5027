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
	plain := query
	query = digesting(query, &digest)
	var extra []Table
	seen := map[QualifiedName]bool{}
	for _, t := range p.Tables {
		seen[t.QualifiedName] = true
	}
	protected := map[uint32]*Table{}
	chk := &policyCheck{ctx: ctx, query: query, source: p.Source}
	// The version first: a snapshot read after it can only be newer (version.go).
	ver, err := pgcatalog.Version(ctx, query)
	if err != nil {
		return nil, chk.readError("reading the catalog version", err)
	}
	// Where catalog_refresh will read the catalog again, its fingerprint, before the
	// rest: a later fingerprint equal to it means nothing this read sees has changed
	// (pgcatalog.Fingerprint). Left out of the digest, which is of what the rest read.
	var fingerprint string
	if p.CatalogRefresh > 0 && !ver.Installed() {
		fingerprint, _ = pgcatalog.Fingerprint(ctx, plain) // "": the first period reads it all
	}
	for i := range p.Tables {
		t := &p.Tables[i]
		rels, err := pgcatalog.Relations(ctx, query, t.Schema, t.Name, t.EpochColumn)
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
	for _, c := range p.Claims {
		rels, err := pgcatalog.Relations(ctx, query, c.Schema, c.Name, c.EpochColumn)
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
	var columns []string
	for _, t := range p.Tables {
		if !slices.Contains(columns, t.EpochColumn) {
			columns = append(columns, t.EpochColumn)
		}
	}
	missing, err := catalogMissing(ctx, query, ver, protected)
	if err != nil {
		return nil, chk.readError("reading the guard's triggers", err)
	}
	snap, err := pgcatalog.LoadSnapshot(ctx, query, columns)
	if err != nil {
		return nil, chk.readError("reading the snapshot", err)
	}
	r := p.withTables(extra).withSnapshot(snap, protected)
	r.CatalogMissing = missing
	r.CatalogRead = ver
	if missing == "" {
		r.CatalogVersion = ver.Version
	}
	r.digest = digest
	r.CatalogFingerprint = fingerprint
	return r, nil
}

// catalogMissing says what keeps DDL of other sessions from reaching the fence:
// no catalog version, a disabled event trigger, an older guard, or a protected
// relation without the guard's trigger (where the version is compared). "" when
// nothing does.
func catalogMissing(ctx context.Context, query Querier, ver pgcatalog.CatalogVersion, protected map[uint32]*Table) (string, error) {
	switch {
	case ver.Version == 0:
		return "the database has no catalog version (schema sqlfence, installed with the guard)", nil
	case !ver.Triggers:
		return "sqlfence's event triggers (sqlfence_catalog_ddl, sqlfence_catalog_drop) are missing, disabled, or not enabled always (a trigger enabled plainly does not fire for DDL made with session_replication_role = replica)", nil
	case !ver.Guard:
		return "the guard installed is older than this sqlfence and does not compare catalog versions", nil
	}
	oids := make([]uint32, 0, len(protected))
	for oid := range protected {
		oids = append(oids, oid)
	}
	slices.Sort(oids)
	bare, err := pgcatalog.Unguarded(ctx, query, oids)
	if err != nil || len(bare) == 0 {
		return "", err
	}
	return "the guard is not on " + strings.Join(bare, ", ") + " (a table, partition or child created after it was installed), or its trigger sqlfence_guard there is disabled or not enabled always", nil
}

// Findings are what the catalog holds that makes the engine refuse writes whose text
// does not show why (what `sqlfence guard` reports).
func (p *Policy) Findings() []CatalogFinding {
	if p.catalog == nil {
		return nil
	}
	return slices.Clone(p.catalog.findings)
}
