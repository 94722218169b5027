// The decision cache's figures, as a program reads them (CacheStatsOf).

package sqlfence

import "database/sql/driver"

// CacheStats describes the decision cache of one connector: how often a statement's
// decision came from the cache, and how much the cache holds against its bounds.
type CacheStats struct {
	Hits      uint64 // executions and prepares whose decision came from the cache
	Misses    uint64 // statements decided afresh: first seen, evicted, or too large to cache
	ShapeHits uint64 // of the Misses, those decided without parsing: an earlier text differed only in literal values
	Evictions uint64 // entries dropped to stay within the bounds

	Entries    int // decisions cached now
	Bytes      int // their accounted size
	MaxEntries int // the bounds: Entries ≤ MaxEntries and Bytes ≤ MaxBytes always
	MaxBytes   int // (each connection's memo may also keep 4 small evicted entries)
}

// HitRate is Hits / (Hits + Misses), or 0 before the first statement. Below about
// 0.99 in steady state, the application likely builds SQL text per call (inlined
// literals); use parameters, or raise the cache's bounds.
func (s CacheStats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// CacheStatsOf reports the decision cache of a connector made by NewConnector, or by
// the registered driver's OpenConnector:
//
//	connector, err := sqlfence.Driver{}.OpenConnector(dsn)
//	db := sql.OpenDB(connector)
//	…
//	st, _ := sqlfence.CacheStatsOf(connector)
//
// ok is false for any other connector. Counters are read without stopping lookups,
// so a snapshot taken under load is consistent per field, not across fields. Hits,
// Misses and Evictions count from the connector's start, across the fresh caches
// that reading the catalog again (resolve: catalog) begins.
func CacheStatsOf(c driver.Connector) (st CacheStats, ok bool) {
	fc, ok := c.(*connector)
	if !ok {
		return CacheStats{}, false
	}
	fc.resolveMu.Lock() // retired and the enforcer change together, under it
	defer fc.resolveMu.Unlock()
	st = CacheStats(fc.enforcer.Load().eng.Stats())
	st.Hits += fc.retired.Hits
	st.Misses += fc.retired.Misses
	st.Evictions += fc.retired.Evictions
	return st, true
}
