// Package pgtest gives tests a real PostgreSQL: a throwaway cluster per test
// binary (started by internal/pgcluster) and a fresh database per test.
//
// sqlfence's behavior depends on what a real server accepts, rejects and
// locks, so tests talk to a real PostgreSQL rather than a mock. Starting a
// cluster takes a second or two, too slow to pay per test, while a shared
// database lets tests see each other's tables. So each test binary starts at
// most one cluster and each test gets its own database created from
// template0, which is cheap and, unlike template1, can be copied by many
// parallel tests at once because nobody may connect to it:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		dsn := pgtest.NewDB(t)
//		...
//	}
//
// The cluster's server binaries are the machine's own PostgreSQL or, where it has
// none, PostgreSQL fetched once into the user's cache (internal/pgbin). Setting
// SQLFENCE_TEST_DSN to a superuser DSN uses that server instead.
//
// This package imports testing; programs that start a cluster (the demo) use
// internal/pgcluster directly.
package pgtest

import (
	"context"

	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

// EnvDSN names the environment variable that points tests at an existing
// server instead of a throwaway cluster.
const EnvDSN = "SQLFENCE_TEST_DSN"

// ErrNoServer reports that no PostgreSQL server binaries were found or fetched. It is
// the one failure that says nothing about the code under test, so callers may
// treat it as a reason to skip rather than fail.
var ErrNoServer = pgcluster.ErrNoServer

// Cluster is a running throwaway PostgreSQL server. Stop it to free its port
// and delete its data.
type Cluster = pgcluster.Cluster

// Start initializes a new cluster in a temporary directory and starts a server
// on a free loopback port. ctx bounds only the startup; the server runs until
// Stop or until this process dies.
func Start(ctx context.Context) (*Cluster, error) { return pgcluster.Start(ctx) }
