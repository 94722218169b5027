// The checks of the policy against the database, of the guard for this policy, and
// of the catalog version.

package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// policyFixes is the fix of each finding the policy check fails on; the finding's
// message names the table and the SQL.
var policyFixes = map[string]string{
	rulecode.PolicyTableMissing:  "fix the name in the policy (the closest existing names are given), or create the table before the application starts",
	rulecode.PolicyEpochColumn:   "run the ALTER TABLE the message gives, or name the right column (epoch_column) in the policy",
	rulecode.PolicyNameAmbiguous: "qualify the name in the policy with its schema, one entry per table meant",
	rulecode.CatalogUnreadable:   "give the role read access to pg_catalog back, or choose resolve: none and install the guard",
}

func (d *doctor) guardCommand() string {
	return "sqlfence guard --policy " + d.policyPath + " --apply --dsn <a superuser's DSN>"
}

// checkPolicy judges the policy against the database as a connector under resolve:
// catalog does (Policy.CheckCatalog), and reads the relations each protected table
// covers for the checks after it.
func (d *doctor) checkPolicy(ctx context.Context) {
	d.relations = map[int][]pgcatalog.Relation{}
	for i, t := range d.policy.Tables {
		rels, err := pgcatalog.Relations(ctx, d.query, t.Schema, t.Name, t.EpochColumn)
		if err != nil {
			d.unreadable("policy", "the relations of "+t.QualifiedName.String(), err)
			return
		}
		if len(rels) > 0 {
			d.relations[i] = rels
		}
	}
	findings, err := d.policy.CheckCatalog(ctx, d.query)
	if err != nil {
		d.unreadable("policy", "the catalog", err)
		return
	}
	failed := false
	for _, f := range findings {
		if f.Kind == "policy" {
			failed = true
			fix := policyFixes[f.Code]
			d.add(Check{Check: "policy", Status: Fail, Code: f.Code, Detail: fmt.Sprintf("%s line %d: %s", d.policyPath, f.Line, f.Message), Fix: fix})
			continue
		}
		d.add(Check{Check: "policy", Status: Warn, Code: f.Code,
			Detail: fmt.Sprintf("%s %s on %s: %s", f.Kind, sqlident.Quote(f.Name), f.Relation, f.Message),
			Fix:    "the driver refuses the statements that fire it (resolve: catalog) and the guard rejects its writes: change or drop it, as the message says"})
	}
	if !failed {
		n := len(d.policy.Tables)
		d.add(Check{Check: "policy", Status: Pass, Detail: fmt.Sprintf("%d protected %s and %d claim %s exist, each with a bigint NOT NULL epoch column",
			n, cmdutil.Plural(n, "table", "tables"), len(d.policy.Claims), cmdutil.Plural(len(d.policy.Claims), "table", "tables"))})
	}
}

// checkGuard judges the guard for this policy: every relation each protected table's
// rows can be written through carries both triggers, for the policy's epoch column,
// firing in every replication role.
func (d *doctor) checkGuard(ctx context.Context) {
	var installed bool
	if err := d.conn.QueryRow(ctx, "SELECT to_regprocedure('sqlfence.guard()') IS NOT NULL").Scan(&installed); err != nil {
		d.unreadable("guard", "the guard's functions", err)
		return
	}
	if !installed {
		d.add(Check{Check: "guard", Status: Fail, Detail: "the guard is not installed: writes from psql, migrations, scripts and other services reach the protected tables without an epoch, and nothing rejects them",
			Fix: d.guardCommand()})
		return
	}
	d.guardInstalled = true
	var all []uint32
	problems := 0
	for i, t := range d.policy.Tables {
		rels, ok := d.relations[i]
		if !ok {
			continue // the policy check failed it
		}
		var oids []uint32
		for _, r := range rels {
			if !r.IsView() {
				oids = append(oids, r.OID)
			}
		}
		all = append(all, oids...)
		state, err := pgcatalog.GuardState(ctx, d.query, oids)
		if err != nil {
			d.unreadable("guard", "the guard's triggers on "+t.QualifiedName.String(), err)
			return
		}
		bad := 0
		noInsert := 0
		for _, g := range state {
			fail := func(detail string) {
				bad++
				d.add(Check{Check: "guard", Status: Fail, Detail: fmt.Sprintf("%s (policy: %s): %s", g.Name, t.QualifiedName, detail), Fix: "re-run " + d.guardCommand()})
			}
			switch g.Statement {
			case pgcatalog.FiresAlways:
			case pgcatalog.Missing:
				fail("has no " + pgcatalog.GuardTrigger + " trigger: its writes are not rejected (a partition or child made while the event triggers were missing, or a table created since)")
			default:
				fail("its " + pgcatalog.GuardTrigger + " trigger is " + g.Statement.Describe() + "; it must fire in every replication role")
			}
			switch g.Epoch {
			case pgcatalog.FiresAlways:
				if g.EpochColumn != t.EpochColumn {
					fail(fmt.Sprintf("its %s trigger guards the column %s, but the policy's epoch column is %s", pgcatalog.GuardEpochTrigger, sqlident.Quote(g.EpochColumn), sqlident.Quote(t.EpochColumn)))
				}
			case pgcatalog.Missing:
				fail("has no " + pgcatalog.GuardEpochTrigger + " trigger: an UPDATE can lower its epoch")
			default:
				fail("its " + pgcatalog.GuardEpochTrigger + " trigger is " + g.Epoch.Describe() + "; it must fire in every replication role")
			}
			if g.Statement != pgcatalog.Missing && !g.StatementInsert {
				noInsert++
			}
		}
		problems += bad
		if noInsert > 0 {
			on := fmt.Sprintf("%d of its %d relations", noInsert, len(state))
			if noInsert == len(state) {
				on = "it"
				if len(state) > 1 {
					on = fmt.Sprintf("any of its %d relations", len(state))
				}
			}
			d.add(Check{Check: "guard", Status: Warn, Detail: fmt.Sprintf("%s: INSERT (and COPY FROM) is not guarded on %s (the guard was installed with --no-insert)", t.QualifiedName, on),
				Fix: "re-run " + d.guardCommand() + " without --no-insert"})
		}
		if bad == 0 {
			d.add(Check{Check: "guard", Status: Pass, Detail: fmt.Sprintf("%s: %d %s guarded, both triggers firing in every replication role", t.QualifiedName, len(state), cmdutil.Plural(len(state), "relation", "relations"))})
		}
	}
	if extra, err := pgcatalog.GuardedElsewhere(ctx, d.query, all); err == nil && len(extra) > 0 {
		d.add(Check{Check: "guard", Status: Warn, Detail: fmt.Sprintf("the guard also covers %s, which the policy does not protect: their writes need the driver's marker, which the driver does not give them", strings.Join(extra, ", ")),
			Fix: "sqlfence guard --drop --apply --dsn <a superuser's DSN>, then " + d.guardCommand()})
	}
	if d.behindPooler && !d.fencedByRole {
		d.add(Check{Check: "pooler", Status: Fail, Code: "SF001", Detail: "behind PgBouncer the driver's startup parameter " + sqlfence.GuardSetting + " does not reach the server sessions (ignore_startup_parameters drops it), and the role's sessions do not carry it: the guard rejects every write",
			Fix: fmt.Sprintf("ALTER ROLE %s IN DATABASE %s SET %s = on; (as a superuser), and list %s in PgBouncer's ignore_startup_parameters",
				sqlident.Quote(d.user), sqlident.Quote(d.database), sqlfence.GuardSetting, sqlfence.GuardSetting)})
	}
}

// checkCatalog judges the catalog version: without it (or with its event triggers
// off) a connector under resolve: catalog does not see other sessions' DDL, and
// refuses fenced writes unless the policy sets catalog_refresh.
func (d *doctor) checkCatalog(ctx context.Context) {
	if !d.policy.ResolveCatalog {
		d.add(Check{Check: "catalog", Status: Pass, Detail: "resolve: none: the driver reads no catalog, so the catalog version is not used"})
		return
	}
	v, err := pgcatalog.Version(ctx, d.query)
	if err != nil {
		d.unreadable("catalog", "the catalog version", err)
		return
	}
	ets, err := pgcatalog.EventTriggers(ctx, d.query)
	if err != nil {
		d.unreadable("catalog", "the event triggers", err)
		return
	}
	refresh := d.policy.CatalogRefresh
	missing := func(detail string) {
		if refresh > 0 {
			d.add(Check{Check: "catalog", Status: Warn, Code: rulecode.CatalogNotInstalled,
				Detail: fmt.Sprintf("%s: with catalog_refresh %v the driver reads the catalog again that often, and DDL of other sessions goes unseen for up to that long", detail, refresh),
				Fix:    d.guardCommand() + " (a superuser creates the event triggers), then drop catalog_refresh from the policy"})
			return
		}
		d.add(Check{Check: "catalog", Status: Fail, Code: rulecode.CatalogNotInstalled,
			Detail: detail + ": a connector under resolve: catalog refuses every fenced write",
			Fix:    d.guardCommand() + " (a superuser creates the event triggers); where none can, set catalog_refresh: 1s in the policy"})
	}
	if v.Version == 0 {
		missing("the database has no catalog version (sqlfence.catalog_version)")
		return
	}
	ok := true
	for _, name := range pgcatalog.GuardEventTriggers {
		switch f := ets[name]; f {
		case pgcatalog.FiresAlways:
		case pgcatalog.Missing:
			ok = false
			missing("the event trigger " + name + " is missing (the guard was installed by a role that is not a superuser)")
		default:
			ok = false
			d.add(Check{Check: "catalog", Status: Fail, Code: rulecode.CatalogNotInstalled,
				Detail: fmt.Sprintf("the event trigger %s is %s: DDL in such sessions (pg_restore, logical replication's apply, session_replication_role = replica) does not move the catalog version", name, f.Describe()),
				Fix:    "re-run " + d.guardCommand()})
		}
	}
	if !v.Guard {
		ok = false
		d.add(Check{Check: "catalog", Status: Fail, Detail: "the guard's trigger function does not compare catalog versions: it was installed by an older sqlfence",
			Fix: "re-run " + d.guardCommand()})
	}
	if ok {
		detail := fmt.Sprintf("catalog version %d; both event triggers fire in every replication role: DDL of any session reaches the driver", v.Version)
		if refresh > 0 {
			detail += fmt.Sprintf(" (the policy's catalog_refresh %v is not needed)", refresh)
		}
		d.add(Check{Check: "catalog", Status: Pass, Detail: detail})
	}
}
