// Connector options: what a program can set on NewConnector beyond the policy.

package sqlfence

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// A ConnectorOption configures a connector made by [NewConnector].
type ConnectorOption func(*connectorConfig) error

type connectorConfig struct {
	logger       *slog.Logger
	cacheEntries int
	cacheBytes   int
	observer     func(context.Context, Event)
	shadowEvery  time.Duration
	shadow       *shadowTally // under enforce: shadow; kept across catalog reloads
	// catalogStale is the fence's stale flag: the enforcers set it when the guard
	// says the catalog changed (guardSaid).
	catalogStale *atomic.Bool
}

// WithLogger sends every line the connector logs (shadow mode's new failing shapes and
// summaries, writes let through by [Unfenced], raw connections handed out, a failed
// catalog read) to l instead of slog.Default. nil keeps slog.Default.
func WithLogger(l *slog.Logger) ConnectorOption {
	return func(c *connectorConfig) error {
		if l != nil {
			c.logger = l
		}
		return nil
	}
}

// WithCacheLimits bounds the connector's decision cache at entries decisions and
// bytes bytes of memory, both counted as [CacheStats] reports them (default 10 000
// entries, 32 MiB). A cache that holds a program's distinct statements decides each
// only once; 0 for either bound turns the cache off, so every statement is parsed
// each time it runs.
func WithCacheLimits(entries, bytes int) ConnectorOption {
	return func(c *connectorConfig) error {
		if entries < 0 || bytes < 0 {
			return fmt.Errorf("sqlfence: WithCacheLimits(%d, %d): limits cannot be negative (0 turns the cache off)", entries, bytes)
		}
		c.cacheEntries, c.cacheBytes = entries, bytes
		return nil
	}
}
