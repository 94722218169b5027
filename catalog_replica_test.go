package sqlfence_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// versionCheckBound is how long after DDL that moved no catalog version a connector
// has seen it: the connector reads the version again at most once a second
// (fence.go's versionCheck), and the margin covers a slow machine.
const versionCheckBound = 1500 * time.Millisecond

// TestCatalogDDLWithoutEventTrigger: DDL that the guard's event triggers would not
// see — made in another session in replica mode, or with an event trigger disabled,
// or with the triggers disabled and enabled again around it, or the guard's own
// trigger disabled on the protected table — then a stale INSERT that a rule made
// there turns into a DELETE of a protected row. Each is refused, and the row stays:
// the event triggers are enabled always (they fire in replica mode), and a connector
// notices within versionCheckBound what moved no version.
func TestCatalogDDLWithoutEventTrigger(t *testing.T) {
	t.Parallel()
	const policy = "version: 1\ntables: [inventory, events, ledger]\n"
	const rule = `CREATE RULE purge AS ON INSERT TO inventory DO ALSO DELETE FROM inventory WHERE sku = 'a'`
	cases := []struct {
		name string
		ddl  []string // on one plain session, in order
		wait bool     // the route moves no version: wait for the connector's check
		// carried: once the connector has the rule (the event triggers saw it, or its
		// check found their rows moved), the rule's DELETE is one the guard fences with
		// the statement's carried epoch: a stale one is refused, a fresh one applies.
		carried bool
	}{
		{"rule made in replica mode", []string{"SET session_replication_role = replica", rule, "RESET session_replication_role"}, false, true},
		{"DO INSTEAD UPDATE made in replica mode", []string{"SET session_replication_role = replica",
			`CREATE RULE lift AS ON INSERT TO inventory DO INSTEAD UPDATE inventory SET quantity = 0 WHERE sku = 'a'`,
			"RESET session_replication_role"}, false, false},
		{"INHERITS child with a rule made in replica mode", []string{"SET session_replication_role = replica",
			"CREATE TABLE inventory_old () INHERITS (inventory)",
			`CREATE RULE purge AS ON INSERT TO inventory_old DO ALSO DELETE FROM inventory WHERE sku = 'a'`,
			"CREATE RULE route AS ON INSERT TO inventory DO INSTEAD INSERT INTO inventory_old VALUES (NEW.*)",
			"RESET session_replication_role"}, false, false},
		{"event trigger disabled", []string{"ALTER EVENT TRIGGER sqlfence_catalog_ddl DISABLE", rule}, true, false},
		{"event trigger enabled only for origin sessions", []string{"ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE",
			"SET session_replication_role = replica", rule, "RESET session_replication_role"}, true, false},
		{"event trigger dropped", []string{"DROP EVENT TRIGGER sqlfence_catalog_ddl", rule}, true, false},
		{"event triggers disabled around the DDL", []string{"ALTER EVENT TRIGGER sqlfence_catalog_ddl DISABLE", rule,
			"ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE ALWAYS"}, true, true},
		{"guard trigger disabled on the table", []string{"ALTER TABLE inventory DISABLE TRIGGER sqlfence_guard", rule}, true, false},
		{"guard trigger enabled only for origin sessions", []string{"ALTER TABLE inventory ENABLE TRIGGER sqlfence_guard", rule}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, raw, _ := freshFixture(t, policy)
			before := stateOf(t, raw)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			conn, err := raw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.ddl {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			conn.Close()
			// The event trigger fired in replica mode too: a new child is guarded.
			if strings.Contains(c.name, "INHERITS") {
				var n int
				if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'inventory_old'::regclass AND tgname = 'sqlfence_guard' AND tgenabled = 'A'`).Scan(&n); err != nil || n != 1 {
					t.Errorf("inventory_old has %d guard triggers enabled always (%v), want 1", n, err)
				}
			}
			if c.wait {
				time.Sleep(versionCheckBound)
			}
			for i, epoch := range []int64{3, 3, 9} {
				_, err := run(db, epoch, "INSERT INTO inventory (sku, quantity) VALUES ('z', 1)")
				if c.carried && epoch == 9 {
					if err != nil {
						t.Fatalf("try %d (epoch %d), the rule's write carried: %v", i+1, epoch, err)
					}
					if got := stateOf(t, raw); !strings.HasPrefix(got, "z:1:9 |") {
						t.Fatalf("try %d (epoch %d): state %q, want the row inserted at 9 and the rule's delete applied", i+1, epoch, got)
					}
					continue
				}
				if err == nil {
					t.Errorf("try %d (epoch %d): the INSERT ran, with a rule or child the connector's snapshot does not have", i+1, epoch)
				}
				if got := stateOf(t, raw); got != before {
					t.Fatalf("try %d (epoch %d): state %q, want %q (err %v)", i+1, epoch, got, before, err)
				}
			}
		})
	}
}

// TestGuardInReplicaSessions: a role default of session_replication_role = replica
// (ALTER ROLE … IN DATABASE … SET) reaches every new session. The connector refuses
// such a session (SF712) before its first statement; a plain session's write, by a
// column default that calls a function writing the protected table, is rejected by
// the guard, whose triggers fire in replica mode too; SET, RESET and set_config of the
// setting are refused on a fenced session.
func TestGuardInReplicaSessions(t *testing.T) {
	t.Parallel()
	// resolve: none, so that the driver leaves the default's write to the guard.
	db, raw, dsn := freshFixture(t, "version: 1\nresolve: none\ntables: [inventory, events, ledger]\n")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rawExec(t, raw, `CREATE FUNCTION drain() RETURNS int LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = 0, writer_epoch = 0; RETURN 1; END$$;
		ALTER TABLE notes ADD COLUMN n int DEFAULT drain()`)
	for _, s := range []string{"SET session_replication_role = replica", "SET LOCAL session_replication_role = 'replica'",
		"RESET session_replication_role", "SELECT set_config('session_replication_role', 'replica', false)"} {
		if _, err := run(db, 0, s); code(err) != rulecode.Setting {
			t.Errorf("%s on a fenced session: %v, want %s", s, err, rulecode.Setting)
		}
	}
	rawExec(t, raw, `DO $$ BEGIN EXECUTE format('ALTER ROLE %I IN DATABASE %I SET session_replication_role = replica', current_user, current_database()); END $$`)
	t.Cleanup(func() {
		rawExec(t, raw, `DO $$ BEGIN EXECUTE format('ALTER ROLE %I IN DATABASE %I RESET session_replication_role', current_user, current_database()); END $$`)
	})
	before := stateOf(t, raw)

	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sqlfence.ParsePolicy([]byte("version: 1\nresolve: none\ntables: [inventory, events, ledger]\n"), "replica.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fresh := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p))
	defer fresh.Close()
	for _, stmt := range []string{"INSERT INTO notes (id) VALUES (1)", "SELECT 1"} {
		_, err := run(fresh, 0, stmt)
		if code(err) != rulecode.ReplicationRole || !strings.Contains(err.Error(), "session_replication_role is replica") ||
			!strings.Contains(err.Error(), "RESET session_replication_role") {
			t.Errorf("%s on a session in replica mode: %v, want %s", stmt, err, rulecode.ReplicationRole)
		}
	}
	// A plain session of the same role, in replica mode: the guard still fires.
	plain, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var role string
	if err := plain.QueryRowContext(ctx, "SHOW session_replication_role").Scan(&role); err != nil || role != "replica" {
		t.Fatalf("the plain session's role is %q (%v), want replica", role, err)
	}
	if _, err := plain.ExecContext(ctx, "INSERT INTO notes (id) VALUES (1)"); code(err) != "SF001" {
		t.Errorf("a default writing inventory in a replica session: %v, want the guard's SF001", err)
	}
	if _, err := plain.ExecContext(ctx, "UPDATE inventory SET writer_epoch = 1"); code(err) != "SF001" && code(err) != "SF002" {
		t.Errorf("an unfenced UPDATE in a replica session: %v, want the guard's refusal", err)
	}
	if got := stateOf(t, raw); got != before {
		t.Fatalf("state %q, want %q", got, before)
	}
}
