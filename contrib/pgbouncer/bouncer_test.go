package pgbouncer_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// bouncer is a PgBouncer in front of the test binary's throwaway cluster.
type bouncer struct {
	port int
	dir  string
}

type bouncerConfig struct {
	// ignore is ignore_startup_parameters.
	ignore []string
	// poolSize is default_pool_size: server connections per database and user.
	poolSize int
}

// pgbouncerBinary finds the pgbouncer executable: PATH, then /usr/sbin
// (Debian's package puts it there, outside an unprivileged PATH).
func pgbouncerBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p
	}
	if fi, err := os.Stat("/usr/sbin/pgbouncer"); err == nil && fi.Mode()&0o111 != 0 {
		return "/usr/sbin/pgbouncer"
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatal("pgbouncer is not installed (CI is set, so not skipping; .ci/run installs it with apt-get install -y pgbouncer)")
	}
	t.Skip("pgbouncer is not installed (apt-get install -y pgbouncer)")
	return ""
}

// pgbouncerVersion reports the installed PgBouncer's version, e.g. [1 18 0].
func pgbouncerVersion(t *testing.T) []int {
	t.Helper()
	out, err := exec.Command(pgbouncerBinary(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("pgbouncer --version: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`PgBouncer (\d+)\.(\d+)\.(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("pgbouncer --version: no version in %q", out)
	}
	v := make([]int, 3)
	for i := range v {
		v[i], _ = strconv.Atoi(string(m[i+1]))
	}
	return v
}

// startBouncer starts PgBouncer in transaction pooling mode on a free loopback
// port, in front of the cluster adminDSN points at, for the given users (all
// trusted, as the cluster trusts them), and stops it when the test ends.
func startBouncer(t *testing.T, adminDSN string, users []string, cfg bouncerConfig) *bouncer {
	t.Helper()
	bin := pgbouncerBinary(t)
	pgcfg, err := pgx.ParseConfig(adminDSN)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to this user, and PgBouncer may run as postgres.
	dir, err := os.MkdirTemp("", "pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cfg.poolSize == 0 {
		cfg.poolSize = 2
	}
	var userlist strings.Builder
	for _, u := range users {
		fmt.Fprintf(&userlist, "%q \"\"\n", u)
	}
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(userlist.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root; run it as the server's account.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, and there is no postgres user to run pgbouncer as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}

	const attempts = 5 // a free port can be taken before PgBouncer binds it
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 200
ignore_startup_parameters = %s
logfile = %s
pidfile = %s
server_login_retry = 1
`, pgcfg.Host, pgcfg.Port, port, filepath.Join(dir, "userlist.txt"), cfg.poolSize,
			strings.Join(cfg.ignore, ","), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
		path := filepath.Join(dir, "pgbouncer.ini")
		if err := os.WriteFile(path, []byte(ini), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, path)
		cmd.SysProcAttr = attr
		out, err := os.Create(filepath.Join(dir, "stdout.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting pgbouncer: %v", err)
		}
		out.Close()
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if waitListening(port, exited) {
			t.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGINT)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
			})
			return &bouncer{port: port, dir: dir}
		}
		cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		so, _ := os.ReadFile(filepath.Join(dir, "stdout.log"))
		if attempt == attempts || !strings.Contains(string(log)+string(so), "ddress already in use") {
			t.Fatalf("pgbouncer did not start:\n%s\n%s", so, log)
		}
	}
}

func waitListening(port int, exited <-chan struct{}) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dsn is a URL through the bouncer for user and database, with extra query
// parameters.
func (b *bouncer) dsn(user, database string, params ...string) string {
	q := append([]string{"sslmode=disable"}, params...)
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?%s", user, b.port, database, strings.Join(q, "&"))
}

// log returns PgBouncer's log, for failure messages.
func (b *bouncer) log() string {
	data, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// newRole creates a login role with a unique name, dropped when the test ends
// (after its database: register it first).
func newRole(t *testing.T, admin *pgx.Conn, prefix string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+name+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	adminDSN := pgtest.AdminDSN(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, adminDSN)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP ROLE IF EXISTS "+name); err != nil {
			t.Error(err)
		}
	})
	return name
}
