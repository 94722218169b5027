// Claim-checked writes, the engine's half: the claim subquery inserted into every
// stamp and fence, its parse nodes for verification, and the claim variant of a
// decision. The context that carries a claim is the root package's (WithClaim).

package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// ClaimCheck is a claim with its names resolved: what the rewrite inserts. A front
// builds it once per context (NewClaimCheck) and hands it to Bind.
type ClaimCheck struct {
	table        QualifiedName
	key, epochCo string
	spec         string // table and columns as SQL text: the claim variant's cache key
	value        any    // the job's key
	err          string // why the claim cannot be used, refused at every protected write
}

// NewClaimCheck resolves a claim's names: table as written in SQL, key and epoch
// columns as single identifiers, value the job's key. A claim that cannot be used
// is not an error here: every protected write under it is refused, saying why.
func NewClaimCheck(table, keyColumn, epochColumn string, value any) *ClaimCheck {
	cc := &ClaimCheck{value: value}
	var err error
	if cc.table, err = ParseQualifiedName(table); err != nil {
		cc.err = fmt.Sprintf("the claim's table %q: %v", table, err)
	}
	for _, col := range []struct {
		dst  *string
		what string
		s    string
	}{{&cc.key, "key column", keyColumn}, {&cc.epochCo, "epoch column", epochColumn}} {
		q, err := ParseQualifiedName(col.s)
		switch {
		case err != nil:
			cc.err = fmt.Sprintf("the claim's %s %q: %v", col.what, col.s, err)
		case q.Schema != "":
			cc.err = fmt.Sprintf("the claim's %s %q is not a single identifier", col.what, col.s)
		}
		*col.dst = q.Name
	}
	if value == nil && cc.err == "" {
		cc.err = "the claim has no key"
	}
	cc.spec = cc.tableSQL() + " " + sqlident.Quote(cc.key) + " " + sqlident.Quote(cc.epochCo)
	return cc
}

// Table, KeyColumn, EpochColumn and Key give the claim back as WithClaim was given it
// (names resolved).
func (cc *ClaimCheck) Table() QualifiedName { return cc.table }
func (cc *ClaimCheck) KeyColumn() string    { return cc.key }
func (cc *ClaimCheck) EpochColumn() string  { return cc.epochCo }
func (cc *ClaimCheck) Key() any             { return cc.value }

// ParseQualifiedName parses a relation or function name written as in SQL
// ("app.jobs", `"Jobs"`) into its identifiers as PostgreSQL resolves them.
func ParseQualifiedName(s string) (QualifiedName, error) {
	parts, err := sqlident.Split(s)
	if err == nil && len(parts) > 2 {
		err = fmt.Errorf("%d dot-separated parts; use name or schema.name", len(parts))
	}
	switch {
	case err != nil:
		return QualifiedName{}, err
	case len(parts) == 1:
		return QualifiedName{Name: parts[0]}, nil
	}
	return QualifiedName{Schema: parts[0], Name: parts[1]}, nil
}

// lookupText reads the claim row's epoch, for the message of a claim-checked write
// that found its claim superseded. It runs only on that failure path.
func (cc *ClaimCheck) lookupText() string {
	return "SELECT " + sqlident.Quote(cc.epochCo) + "::bigint FROM " + cc.tableSQL() +
		" WHERE " + sqlident.Quote(cc.key) + " " + CatalogOperator("=") + " $1"
}

// LockText reads the claim row's epoch and holds it (FOR SHARE) until the
// transaction ends, so that no newer claim can take the job meanwhile: a front
// that cannot put the claim check into a statement (COPY) holds it this way.
func (cc *ClaimCheck) LockText() string { return cc.lookupText() + " FOR SHARE" }

// NotInDatabase explains a claim-checked write the server refused because the claim
// table does not exist in the database it was sent to (SQLSTATE 42P01): the check
// reads the claim row in the write's own statement, so the claim table has to live
// in the database of the protected tables. Any other error gives nil. Nothing was
// written: the statement failed before it ran.
func (cc *ClaimCheck) NotInDatabase(err error, table string, epoch int64, query string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" || !strings.Contains(pgErr.Message, cc.table.Name) {
		return nil
	}
	return fmt.Errorf("sqlfence: table %s, epoch %d: the claim check reads the claim table %s, which this database does not have (%w); "+
		"the claim table must be in the database of the protected tables, since each write reads it in the same statement: "+
		"claim the job in a claim.Ledger in this database (the other database keeps delivering the jobs), or move the claim table here (statement: %s)",
		table, epoch, cc.table, err, Abbreviate(query, 200))
}

// claimVariant returns the decision for d's statement under a claim: the same
// rewrite with the claim check in every stamp and fence. Variants are made on first
// use and kept with d, one per claim table (a program has a few).
func (d *Decision) claimVariant(policy *Policy, query string, cc *ClaimCheck) *Decision {
	m := d.variants.Load()
	if m == nil {
		d.variants.CompareAndSwap(nil, new(sync.Map))
		m = d.variants.Load()
	}
	if v, ok := m.Load(cc.spec); ok {
		return v.(*Decision)
	}
	if d.reading != "" {
		query = d.reading // an older server's reading (versions.go)
	}
	v := analyzeWith(policy, query, cc)
	if v.act == ActRefuse && v.refusal != nil {
		v.refusal = v.refusal.ForStatement("", 0)
		v.refusal.Reason += " (under the claim on table " + cc.table.String() + ")"
	}
	actual, _ := m.LoadOrStore(cc.spec, v)
	return actual.(*Decision)
}

// InSchema returns cc with its unqualified table qualified by schema: the text the
// check adds then names one table whatever the session's search_path or pg_temp
// holds. A qualified cc is returned as it is.
func (cc *ClaimCheck) InSchema(schema string) *ClaimCheck {
	if cc.table.Schema != "" || cc.err != "" {
		return cc
	}
	q := *cc
	q.table.Schema = schema
	q.spec = q.tableSQL() + " " + sqlident.Quote(q.key) + " " + sqlident.Quote(q.epochCo)
	return &q
}
