package pgcluster

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartStop(t *testing.T) {
	c, err := Start(t.Context())
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); errors.Is(err, ErrNoServer) && !ci {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), c.DSN())
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	var user string
	err = conn.QueryRow(t.Context(), "SELECT current_user").Scan(&user)
	if err != nil || user != "postgres" {
		t.Errorf("current_user = %q, %v; want postgres", user, err)
	}

	// Restart keeps committed data and the address, and drops the clients.
	if _, err := conn.Exec(t.Context(), "CREATE TABLE kept AS SELECT 42 AS v"); err != nil {
		t.Error(err)
	}
	if err := c.Restart(t.Context()); err != nil {
		c.Stop()
		t.Fatal(err)
	}
	if err := conn.Ping(t.Context()); err == nil {
		t.Error("a client connected before Restart still works after it")
	}
	conn.Close(t.Context())
	if conn, err = pgx.Connect(t.Context(), c.DSN()); err != nil {
		c.Stop()
		t.Fatal(err)
	}
	var v int
	if err := conn.QueryRow(t.Context(), "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Errorf("after Restart: v = %d, %v; want the committed 42", v, err)
	}
	conn.Close(t.Context())

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := c.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory %s survived Stop: %v", c.dir, err)
	}
	if conn, err := pgx.Connect(t.Context(), c.DSN()); err == nil {
		conn.Close(t.Context())
		t.Error("server still accepts connections after Stop")
	}
}
