// The checks of the server and the session: version, replication, a pooler in front,
// the role's privileges, the timeouts against the lease.

package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

type doctor struct {
	conn       *pgx.Conn
	query      pgcatalog.QueryFunc
	policy     *sqlfence.Policy
	policyPath string
	lease      time.Duration
	rep        Report

	// Read by the checks for those after them.
	user, database string
	standby        bool
	relations      map[int][]pgcatalog.Relation // by index of policy.Tables; missing: the table does not exist
	guardInstalled bool
	behindPooler   bool // a pooler or proxy answers on the DSN's port
	fencedByRole   bool // the session carries sqlfence.fenced = on without sending it (a role or database default)
}

// Supported server versions (server_version_num / 10000).
const minVersion, maxVersion = 15, 18

func (d *doctor) run(ctx context.Context) Report {
	d.query = cmdutil.QueryFunc(d.conn)
	d.rep.Target = cmdutil.DescribeTarget(d.conn.Config())
	d.rep.Policy = d.policyPath
	d.user, d.database = d.conn.Config().User, d.conn.Config().Database
	_ = d.conn.QueryRow(ctx, "SELECT current_user::text, current_database()::text").Scan(&d.user, &d.database)
	d.checkServer(ctx)
	d.checkReplication(ctx)
	d.checkPooler(ctx)
	d.checkPolicy(ctx)
	d.checkRole(ctx)
	d.checkGuard(ctx)
	d.checkCatalog(ctx)
	d.checkTimeouts(ctx)
	return d.rep
}

func (d *doctor) add(c Check) { d.rep.add(c) }

func (d *doctor) unreadable(check, what string, err error) {
	d.add(Check{Check: check, Status: Skip, Detail: fmt.Sprintf("not checked: reading %s failed: %v", what, err)})
}

func (d *doctor) checkServer(ctx context.Context) {
	var num int
	var version string
	if err := d.conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('server_version')").Scan(&num, &version); err != nil {
		d.unreadable("server", "the server version", err)
		return
	}
	major := num / 10000
	switch {
	case major < minVersion:
		d.add(Check{Check: "server", Status: Fail, Detail: fmt.Sprintf("PostgreSQL %s is older than sqlfence supports (%d to %d)", version, minVersion, maxVersion),
			Fix: fmt.Sprintf("upgrade the server to PostgreSQL %d or later", minVersion)})
	case major > maxVersion:
		d.add(Check{Check: "server", Status: Warn, Detail: fmt.Sprintf("PostgreSQL %s is newer than sqlfence is tested on (%d to %d): its parser may read new syntax differently", version, minVersion, maxVersion),
			Fix: "run sqlfence's tests against this server (SQLFENCE_TEST_PG_BIN), or use a release of sqlfence that supports it"})
	default:
		d.add(Check{Check: "server", Status: Pass, Detail: fmt.Sprintf("PostgreSQL %s (supported: %d to %d)", version, minVersion, maxVersion)})
	}
}

// checkReplication reports whether the server is a primary and whether its commits
// wait for a synchronous standby, with the query the claim helpers'
// RequireSynchronousStandby decides on.
func (d *doctor) checkReplication(ctx context.Context) {
	s, err := pgcatalog.ReadSyncState(ctx, d.query)
	if err != nil {
		d.unreadable("replication", "the server's replication", err)
		return
	}
	d.standby = s.Standby
	switch {
	case s.Standby:
		d.add(Check{Check: "replication", Status: Fail, Detail: "the DSN reaches a standby: it takes no writes, and no claim can be made on it",
			Fix: "point the DSN at the primary (several hosts with target_session_attrs=read-write follow a failover)"})
	case s.Names != "" && s.Sync > 0:
		d.add(Check{Check: "replication", Status: Pass, Detail: fmt.Sprintf("commits wait for %d synchronous %s (synchronous_standby_names = %q): a failover to it keeps every acknowledged claim and fenced write",
			s.Sync, cmdutil.Plural(int(s.Sync), "standby", "standbys"), s.Names)})
	case s.Names != "" && s.Invisible > 0:
		d.add(Check{Check: "replication", Status: Warn, Detail: fmt.Sprintf("synchronous_standby_names = %q, but the role may not see which standbys are synchronous (pg_stat_replication.sync_state): claims under RequireSynchronousStandby are refused [SF611]", s.Names),
			Fix: fmt.Sprintf("GRANT pg_monitor TO %s;", sqlident.Quote(d.user))})
	case s.Names != "":
		d.add(Check{Check: "replication", Status: Warn, Detail: fmt.Sprintf("synchronous_standby_names = %q names standbys, but none is attached as synchronous: every commit waits until one is, and claims under RequireSynchronousStandby are refused [SF611]", s.Names),
			Fix: "bring the synchronous standby back, or change synchronous_standby_names to the standbys you have"})
	case s.Async+s.Invisible > 0:
		d.add(Check{Check: "replication", Status: Warn, Detail: fmt.Sprintf("%d %s replicate asynchronously: a failover can lose the last commits, claims among them; the claim helpers then stop the lease [SF610] and a connector refuses the old primary come back [SF707], but a lost claim's epoch can be drawn again",
			s.Async+s.Invisible, cmdutil.Plural(int(s.Async+s.Invisible), "standby", "standbys")),
			Fix: "replicate synchronously (synchronous_standby_names; Patroni: synchronous_mode and synchronous_mode_strict) and set RequireSynchronousStandby on the claim helpers"})
	default:
		d.add(Check{Check: "replication", Status: Pass, Detail: "a primary with no standbys attached: no failover can lose a claim (a restore from a backup can: run sqlfence audit after one)"})
	}
}

// checkPooler finds a pooler or proxy between the client and the server: the server
// sees its client connection arrive on another port than the DSN's, or over a
// socket where the DSN gave TCP. Behind one (PgBouncer's transaction pooling), the
// startup message's sqlfence.fenced does not reach the server sessions, and named
// prepared statements of pgx's default mode break before PgBouncer 1.21.
func (d *doctor) checkPooler(ctx context.Context) {
	cfg := d.conn.Config()
	if strings.HasPrefix(cfg.Host, "/") {
		d.add(Check{Check: "pooler", Status: Pass, Detail: "connected over a Unix socket: no pooler in front was detected"})
		return
	}
	var port *int32
	var fenced string
	if err := d.conn.QueryRow(ctx, "SELECT inet_server_port(), coalesce(current_setting('"+sqlfence.GuardSetting+"', true), '')").Scan(&port, &fenced); err != nil {
		d.unreadable("pooler", "the server's port", err)
		return
	}
	if port != nil && uint16(*port) == cfg.Port {
		d.add(Check{Check: "pooler", Status: Pass, Detail: fmt.Sprintf("the server answers on the DSN's port %d itself: no pooler in front", cfg.Port)})
		return
	}
	where := "over a Unix socket"
	if port != nil {
		where = "on port " + strconv.Itoa(int(*port))
	}
	d.add(Check{Check: "pooler", Status: Pass, Detail: fmt.Sprintf("a pooler or proxy answers on port %d: the server sees this session arrive %s (PgBouncer?)", cfg.Port, where)})
	d.behindPooler = true
	d.fencedByRole = fenced == "on"
	switch cfg.DefaultQueryExecMode {
	case pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeSimpleProtocol:
	default:
		d.add(Check{Check: "pooler", Status: Warn, Detail: "the DSN keeps pgx's default statement cache, which prepares statements by name: behind PgBouncer before 1.21 they go missing or collide (42P05)",
			Fix: "add default_query_exec_mode=exec to the DSN (or run PgBouncer 1.21 or later with max_prepared_statements)"})
	}
}

// checkRole judges what the application's role can do to the guard.
func (d *doctor) checkRole(ctx context.Context) {
	const roleSQL = `SELECT r.rolsuper, r.rolbypassrls,
	  coalesce((SELECT pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE') OR pg_catalog.pg_has_role(r.oid, n.nspowner, 'USAGE')
	            FROM pg_catalog.pg_namespace n WHERE n.nspname = 'sqlfence'), false),
	  coalesce(pg_catalog.has_sequence_privilege(r.oid, pg_catalog.to_regclass('sqlfence.catalog_version'), 'UPDATE'), false),
	  coalesce(pg_catalog.has_table_privilege(r.oid, pg_catalog.to_regclass('sqlfence.guarded_names'), 'INSERT,UPDATE,DELETE,TRUNCATE'), false),
	  coalesce(pg_catalog.has_table_privilege(r.oid, pg_catalog.to_regclass('sqlfence.override_log'), 'UPDATE,DELETE,TRUNCATE'), false)
	FROM pg_catalog.pg_roles r WHERE r.rolname = current_user`
	var super, bypass, schema, seq, names, log bool
	if err := d.conn.QueryRow(ctx, roleSQL).Scan(&super, &bypass, &schema, &seq, &names, &log); err != nil {
		d.unreadable("role", "the role's privileges", err)
		return
	}
	role := sqlident.Quote(d.user)
	if super {
		d.add(Check{Check: "role", Status: Fail, Detail: fmt.Sprintf("the role %s is a superuser: it can disable the guard's triggers (ALTER TABLE … DISABLE TRIGGER, session_replication_role) and drop the guard", role),
			Fix: fmt.Sprintf("connect the application as a role without SUPERUSER (CREATE ROLE app LOGIN; GRANT SELECT, INSERT, UPDATE, DELETE ON the tables TO app), or ALTER ROLE %s NOSUPERUSER", role)})
		return
	}
	var writes []string
	if schema {
		writes = append(writes, "create or replace objects in the schema sqlfence (the guard's functions)")
	}
	if seq {
		writes = append(writes, "setval the catalog version sqlfence.catalog_version")
	}
	if names {
		writes = append(writes, "write sqlfence.guarded_names")
	}
	if log {
		writes = append(writes, "change or delete the override log sqlfence.override_log")
	}
	if len(writes) > 0 {
		d.add(Check{Check: "role", Status: Fail, Detail: fmt.Sprintf("the role %s can %s", role, strings.Join(writes, ", ")),
			Fix: fmt.Sprintf("install the guard as another role (a superuser), and REVOKE ALL ON SCHEMA sqlfence, ALL TABLES IN SCHEMA sqlfence, ALL SEQUENCES IN SCHEMA sqlfence FROM %s (then GRANT USAGE ON SCHEMA sqlfence TO PUBLIC again, as the guard does)", role)})
	}
	owned := d.ownedTables(ctx)
	if len(owned) > 0 {
		d.add(Check{Check: "role", Status: Warn, Detail: fmt.Sprintf("the role %s owns the protected %s %s: an owner can disable the guard's triggers (ALTER TABLE … DISABLE TRIGGER) from outside the driver",
			role, cmdutil.Plural(len(owned), "table", "tables"), strings.Join(owned, ", ")),
			Fix: fmt.Sprintf("let a migration role own them: ALTER TABLE %s OWNER TO migrator; GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %s;", owned[0], owned[0], role)})
	}
	if len(writes) == 0 && len(owned) == 0 {
		detail := fmt.Sprintf("the role %s is no superuser, owns no protected table and cannot change the schema sqlfence", role)
		if bypass {
			detail += " (it bypasses row-level security, which the fence does not rely on)"
		}
		d.add(Check{Check: "role", Status: Pass, Detail: detail})
	}
}

// ownedTables lists the protected relations (tables, partitions, children) the
// session's role owns or is a member of the owner of.
func (d *doctor) ownedTables(ctx context.Context) []string {
	var oids []uint32
	for _, rels := range d.relations {
		for _, r := range rels {
			if !r.IsView() {
				oids = append(oids, r.OID)
			}
		}
	}
	if len(oids) == 0 {
		return nil
	}
	rows, err := d.query(ctx, `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = ANY ($1::pg_catalog.oid[]) AND pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE') ORDER BY 1`, oids)
	if err != nil {
		return []string{fmt.Sprintf("(not checked: %v)", err)}
	}
	var out []string
	for _, r := range rows {
		if s, ok := r[0].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkTimeouts compares the session's statement_timeout and lock_timeout with the
// lease: a statement that may wait longer than the lease outlives the claim it runs
// under. The fence still refuses its write once a newer claim took the job, but the
// worker holds locks and a connection for nothing, and the newer claim's writes wait
// behind it.
func (d *doctor) checkTimeouts(ctx context.Context) {
	rows, err := d.query(ctx, `SELECT name::text, setting::int8 FROM pg_catalog.pg_settings WHERE name IN ('statement_timeout', 'lock_timeout') ORDER BY name`)
	if err != nil {
		d.unreadable("timeouts", "statement_timeout and lock_timeout", err)
		return
	}
	for _, r := range rows {
		name, _ := r[0].(string)
		ms, _ := r[1].(int64)
		t := time.Duration(ms) * time.Millisecond
		fix := fmt.Sprintf("ALTER ROLE %s SET %s = '%s'; (below the lease %v; or SET LOCAL it in the transactions that run under a lease)",
			sqlident.Quote(d.user), name, cmdutil.PGDuration(d.lease/3), d.lease)
		switch {
		case ms == 0:
			d.add(Check{Check: "timeouts", Status: Warn, Detail: fmt.Sprintf("%s is 0 (none): a statement can wait past the lease %v; the fence refuses its write once the job is claimed again, but until then it holds its locks and the new claim's writes wait behind it", name, d.lease), Fix: fix})
		case t >= d.lease:
			d.add(Check{Check: "timeouts", Status: Warn, Detail: fmt.Sprintf("%s is %v, not below the lease %v: a statement can outlive its claim", name, t, d.lease), Fix: fix})
		default:
			d.add(Check{Check: "timeouts", Status: Pass, Detail: fmt.Sprintf("%s is %v, below the lease %v", name, t, d.lease)})
		}
	}
}
