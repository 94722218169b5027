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
	shadow       *shadowTally  // under enforce: shadow; kept across catalog reloads
	claims       *claimSchemas // the claim tables' schemas, kept across catalog reloads
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

// WithObserver calls fn with an [Event] for every statement the connector's
// connections decide and every check of a fenced write's result, on the goroutine
// that runs the statement and before the statement's result returns: fn must be
// quick and must not use the connection. The context is the statement's, so fn can
// add to the caller's trace span. The contrib/otel module provides one.
func WithObserver(fn func(context.Context, Event)) ConnectorOption {
	return func(c *connectorConfig) error {
		c.observer = fn
		return nil
	}
}

// WithShadowSummary sets how often a connector under `enforce: shadow` logs the summary
// of what enforcement would have done (default one minute); 0 turns the summary off,
// and [ShadowReportOf] still counts. The summary is logged by a statement that runs
// once the interval has passed, so an idle connector logs nothing.
func WithShadowSummary(every time.Duration) ConnectorOption {
	return func(c *connectorConfig) error {
		if every < 0 {
			return fmt.Errorf("sqlfence: WithShadowSummary(%v): the interval cannot be negative (0 turns the summary off)", every)
		}
		c.shadowEvery = every
		return nil
	}
}
