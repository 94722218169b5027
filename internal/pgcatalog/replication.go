// Whether a server's commits wait for a standby: what the claim helpers'
// RequireSynchronousStandby decides on, and what sqlfence doctor reports.

package pgcatalog

import (
	"context"
	"fmt"
)

// SyncStateSQL reads synchronous_standby_names, the standbys attached as synchronous
// (sync or quorum), those whose sync_state this role may not see (NULL without
// pg_read_all_stats), the other standbys, and whether the server is itself a standby.
const SyncStateSQL = "SELECT pg_catalog.current_setting('synchronous_standby_names'), " +
	"(SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_replication r WHERE r.sync_state IN ('sync', 'quorum')), " +
	"(SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_replication r WHERE r.sync_state IS NULL), " +
	"pg_catalog.pg_is_in_recovery(), " +
	"(SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_replication r WHERE r.sync_state NOT IN ('sync', 'quorum'))"

// SyncState is what SyncStateSQL read.
type SyncState struct {
	Names     string // synchronous_standby_names
	Sync      int64  // standbys attached as synchronous
	Invisible int64  // standbys whose sync_state the role may not see
	Async     int64  // standbys attached asynchronously (potential, async)
	Standby   bool   // the server is in recovery
}

// ReadSyncState reads the server's synchronous replication.
func ReadSyncState(ctx context.Context, query QueryFunc) (SyncState, error) {
	rows, err := query(ctx, SyncStateSQL)
	if err != nil {
		return SyncState{}, err
	}
	if len(rows) != 1 || len(rows[0]) != 5 {
		return SyncState{}, fmt.Errorf("pgcatalog: replication query returned %v", rows)
	}
	r := rows[0]
	var s SyncState
	var ok [5]bool
	s.Names, ok[0] = r[0].(string)
	s.Sync, ok[1] = r[1].(int64)
	s.Invisible, ok[2] = r[2].(int64)
	s.Standby, ok[3] = r[3].(bool)
	s.Async, ok[4] = r[4].(int64)
	for _, o := range ok {
		if !o {
			return SyncState{}, fmt.Errorf("pgcatalog: replication query returned unexpected values %v", r)
		}
	}
	return s, nil
}
