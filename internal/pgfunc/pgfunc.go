// Package pgfunc is what sqlfence knows about PostgreSQL's built-in functions without
// asking a database: their names and volatility, which volatile ones cannot write a
// table or change how the server reads statements, and which run SQL text they are
// given. The driver judges calls with it; sqlfence check reports with the same answer.
package pgfunc

import (
	_ "embed"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Volatility is pg_proc.provolatile: what PostgreSQL lets a function do.
type Volatility byte

const (
	Immutable Volatility = 'i' // depends on its arguments only
	Stable    Volatility = 's' // reads the database, cannot write it (PostgreSQL enforces it)
	Volatile  Volatility = 'v' // may do anything
)

// builtinList is every function in pg_catalog of PostgreSQL 15 with the most volatile
// of its overloads, one "name v|s|i" a line, read from pg_proc. A function added in a
// later release is unknown here; with resolve: catalog the driver reads the server's
// own pg_proc instead.
//
//go:embed builtin.txt
var builtinList string

var builtins = sync.OnceValue(func() map[string]Volatility {
	m := make(map[string]Volatility, 2700)
	for line := range strings.SplitSeq(builtinList, "\n") {
		name, v, ok := strings.Cut(line, " ")
		if ok && len(v) == 1 {
			m[name] = Volatility(v[0])
		}
	}
	return m
})

// BuiltinsAtLeast is the embedded list's names whose volatility is at least v, one a
// line (Immutable: every name; Stable: the stable and the volatile; Volatile: the
// volatile). The catalog read sends the three to the server, which answers with only
// the functions it has that the list does not know, or knows as less volatile
// (pgcatalog.BuiltinsSQL).
func BuiltinsAtLeast(v Volatility) string {
	return builtinsAtLeast()[v]
}

var builtinsAtLeast = sync.OnceValue(func() map[Volatility]string {
	m := builtins()
	lists := map[Volatility]*strings.Builder{Immutable: {}, Stable: {}, Volatile: {}}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		for at, b := range lists {
			if atLeast(m[name], at) {
				b.WriteString(name)
				b.WriteByte('\n')
			}
		}
	}
	out := make(map[Volatility]string, len(lists))
	for at, b := range lists {
		out[at] = b.String()
	}
	return out
})

// atLeast reports whether v is at least as volatile as than (i < s < v). A letter
// other than those three ranks below them all: its name is then in no list, and the
// server's answer for it stands.
func atLeast(v, than Volatility) bool {
	rank := func(x Volatility) int { return strings.IndexByte("isv", byte(x)) }
	return rank(v) >= rank(than)
}

// Builtin returns the volatility of the pg_catalog function called name, and whether
// there is one.
func Builtin(name string) (Volatility, bool) {
	v, ok := builtins()[name]
	return v, ok
}

// harmlessVolatile are the volatile built-ins reviewed one by one: none writes a table
// other than its own catalog (sequences, large objects, advisory locks, notifications),
// runs SQL text, or changes how the session reads statements.
var harmlessVolatile = map[string]bool{
	"clock_timestamp": true, "timeofday": true, "random": true, "setseed": true, "gen_random_uuid": true,
	"nextval": true, "currval": true, "setval": true, "lastval": true, "pg_sequence_last_value": true,
	"pg_sleep": true, "pg_sleep_for": true, "pg_sleep_until": true,
	"pg_notify": true, "pg_notification_queue_usage": true,
	"pg_advisory_lock": true, "pg_advisory_lock_shared": true, "pg_advisory_unlock": true,
	"pg_advisory_unlock_all": true, "pg_advisory_unlock_shared": true, "pg_advisory_xact_lock": true,
	"pg_advisory_xact_lock_shared": true, "pg_try_advisory_lock": true, "pg_try_advisory_lock_shared": true,
	"pg_try_advisory_xact_lock": true, "pg_try_advisory_xact_lock_shared": true,
	"lo_close": true, "lo_creat": true, "lo_create": true, "lo_from_bytea": true, "lo_get": true,
	"lo_lseek": true, "lo_lseek64": true, "lo_open": true, "lo_put": true, "lo_tell": true, "lo_tell64": true,
	"lo_truncate": true, "lo_truncate64": true, "lo_unlink": true, "loread": true, "lowrite": true,
	"current_query": true, "txid_status": true, "pg_xact_status": true, "pg_xact_commit_timestamp": true,
	"pg_xact_commit_timestamp_origin": true, "pg_last_committed_xact": true, "pg_export_snapshot": true,
	"pg_is_in_recovery": true, "pg_blocking_pids": true, "pg_safe_snapshot_blocking_pids": true,
	"pg_lock_status": true, "pg_cancel_backend": true, "pg_terminate_backend": true, "pg_jit_available": true,
	"pg_current_wal_lsn": true, "pg_current_wal_insert_lsn": true, "pg_current_wal_flush_lsn": true,
	"pg_last_wal_receive_lsn": true, "pg_last_wal_replay_lsn": true, "pg_last_xact_replay_timestamp": true,
	"pg_is_wal_replay_paused": true, "pg_get_wal_replay_pause_state": true,
	"pg_database_size": true, "pg_relation_size": true, "pg_table_size": true, "pg_indexes_size": true,
	"pg_total_relation_size": true, "pg_tablespace_size": true, "pg_partition_tree": true,
	"pg_partition_ancestors": true, "pg_stat_clear_snapshot": true, "pg_stat_have_stats": true,
	"pg_stat_get_xact_blocks_fetched": true, "pg_stat_get_xact_blocks_hit": true,
	"pg_stat_get_xact_function_calls": true, "pg_stat_get_xact_function_self_time": true,
	"pg_stat_get_xact_function_total_time": true, "pg_stat_get_xact_numscans": true,
	"pg_stat_get_xact_tuples_deleted": true, "pg_stat_get_xact_tuples_fetched": true,
	"pg_stat_get_xact_tuples_hot_updated": true, "pg_stat_get_xact_tuples_inserted": true,
	"pg_stat_get_xact_tuples_returned": true, "pg_stat_get_xact_tuples_updated": true,
	"pg_get_backend_memory_contexts": true, "pg_collation_actual_version": true,
	"pg_database_collation_actual_version": true, "pg_isolation_test_session_is_blocked": true,
	"cursor_to_xml": true, "cursor_to_xmlschema": true, // fetch from a cursor: DECLARE only takes a query
}

// HarmlessVolatile reports whether name is a volatile built-in that cannot write a
// user table or change how the session reads statements.
func HarmlessVolatile(name string) bool { return harmlessVolatile[name] }

// runsQueryText are built-ins that run the SQL text they are given as an argument,
// where no parser sees it: query_to_xml('UPDATE … RETURNING …', …) writes.
var runsQueryText = map[string]bool{
	"query_to_xml": true, "query_to_xmlschema": true, "query_to_xml_and_xmlschema": true,
	"ts_stat": true, "ts_rewrite": true,
}

// RunsQueryText reports whether the built-in name runs SQL text given as an argument.
func RunsQueryText(name string) bool { return runsQueryText[name] }
