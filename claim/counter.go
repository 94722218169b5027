// Epochs on distributed PostgreSQL: the counter row, and refusing unordered sequences.
package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// DefaultCounter is the counter table CounterEpoch draws from unless
// configured otherwise. Tables that share it have comparable epochs.
const DefaultCounter = "sqlfence_epoch_counter"

// ErrUnorderedSequence: a GlobalEpoch claim found its arbiter to be a
// distributed engine, where a sequence's values are not ordered across nodes.
// The claim is refused before it draws an epoch.
var ErrUnorderedSequence = errors.New("claim [SF617]: the arbiter's sequences are not ordered across its nodes")

// counterCTE is the statement prefix that draws a CounterEpoch epoch: one
// increment of the single counter row. PostgreSQL runs it when the claim's SET
// first reads it — after the job's row is locked — and its row lock is held
// until the claim commits, so each claim draws after every claim committed
// before it: strictly increasing in commit order, on any engine that
// serialises updates of one row.
func counterCTE(ctr name) string {
	return "WITH sqlfence_next_epoch AS (UPDATE " + ctr.sql + " SET value = value + 1 WHERE one RETURNING value) "
}

const counterEpochSQL = "(SELECT value FROM sqlfence_next_epoch)"

// counterDDL creates the counter row's table, starting above every epoch the
// claim table already holds (seedFrom: a query for its highest), so that
// switching a table from another source to CounterEpoch does not hand out an
// epoch already used: the counter starts at the highest epoch less the floor of
// the server's timeline (epochs are drawn as floor + counter), and at 0 where every
// epoch is below the floor. Other tables that shared a sequence may hold higher
// epochs: run sqlfence audit after a switch.
//
// The counter is not a protected table, so sqlfence would pass an
// application's UPDATE that moves it back; a trigger refuses, in every
// session, an update that does not raise it, and deleting or truncating the
// row (which would restart epochs at 1 once someone inserted it again). An
// operator who must move it disables the trigger, as they would use setval.
// An engine without PL/pgSQL triggers fails on these statements: run the
// table's, and guard the table with privileges.
func counterDDL(ctr name, seedFrom string) string {
	fn := indexName(ctr, "_only_grows") // beside the table, in its schema
	if len(ctr.parts) == 2 {
		fn = pgx.Identifier{ctr.parts[0]}.Sanitize() + "." + fn
	}
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
	one bool PRIMARY KEY DEFAULT true CHECK (one),
	value bigint NOT NULL CHECK (value >= 0)
);
INSERT INTO %[1]s (value) SELECT greatest(coalesce((%[2]s), 0) - %[4]s, 0) ON CONFLICT (one) DO NOTHING;
CREATE OR REPLACE FUNCTION %[3]s() RETURNS trigger LANGUAGE plpgsql AS $sqlfence$
BEGIN
	IF TG_OP = 'UPDATE' AND NEW.value > OLD.value THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION 'sqlfence: the epoch counter %%.%% only grows: %% refused', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
		USING HINT = 'a counter moved back hands out epochs already used, and a stale execution writes again; an operator disables the trigger to change it';
END $sqlfence$;
DROP TRIGGER IF EXISTS sqlfence_only_grows ON %[1]s;
CREATE TRIGGER sqlfence_only_grows BEFORE UPDATE OR DELETE ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[3]s();
DROP TRIGGER IF EXISTS sqlfence_no_truncate ON %[1]s;
CREATE TRIGGER sqlfence_no_truncate BEFORE TRUNCATE ON %[1]s FOR EACH STATEMENT EXECUTE FUNCTION %[3]s();
`, ctr.sql, seedFrom, fn, pgcatalog.EpochFloorSQL)
}

// engineProbeSQL reads what tells a distributed engine from PostgreSQL: the
// version string (CockroachDB and YugabyteDB name themselves in it) and the
// Citus extension.
const engineProbeSQL = "SELECT pg_catalog.version(), EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus')"

// distributedEngine names the engine whose sequences are not ordered across
// nodes, or "" for PostgreSQL.
func distributedEngine(version string, citus bool) string {
	switch {
	case strings.Contains(version, "CockroachDB"):
		return "CockroachDB"
	case strings.Contains(version, "-YB-"):
		return "YugabyteDB"
	case citus:
		return "Citus"
	}
	return ""
}

// engineCache remembers the handles whose server was found to be PostgreSQL,
// so that only a handle's first GlobalEpoch claim pays for the probe. A
// transaction is probed every time: it is short-lived, and caching it would
// keep it reachable.
type engineCache struct {
	mu sync.Mutex
	ok map[DB]bool
}

// checkSequenceOrdered refuses a GlobalEpoch claim on an engine whose
// sequences are not ordered: a claim there could draw an epoch below one
// another node already handed out, and a stale execution would pass the
// fence.
func (t *table) checkSequenceOrdered(ctx context.Context, db DB) error {
	if t.epochs != GlobalEpoch {
		return nil
	}
	cacheable := false
	switch db.(type) {
	case *sql.DB, *sql.Conn:
		cacheable = true
	}
	if cacheable {
		t.engines.mu.Lock()
		ok := t.engines.ok[db]
		t.engines.mu.Unlock()
		if ok {
			return nil
		}
	}
	var (
		version string
		citus   bool
	)
	if err := db.QueryRowContext(claimctx.With(ctx), engineProbeSQL).Scan(&version, &citus); err != nil {
		return fmt.Errorf("claim [SF618]: reading which server the %s %s is on, before its first GlobalEpoch claim: %w", t.kind, t.name, err)
	}
	if engine := distributedEngine(version, citus); engine != "" {
		return fmt.Errorf("%w: the %s %s is on %s (%s), where a sequence hands out values per node: a GlobalEpoch claim could draw an epoch below one already written, and a stale execution would write again; use CounterEpoch (one counter row, ordered on every engine) or PerJobEpoch",
			ErrUnorderedSequence, t.kind, t.name, engine, version)
	}
	if cacheable {
		t.engines.mu.Lock()
		if t.engines.ok == nil {
			t.engines.ok = map[DB]bool{}
		}
		t.engines.ok[db] = true
		t.engines.mu.Unlock()
	}
	return nil
}
