package pgcluster

// A standby's copy of the primary without pg_basebackup. The server builds that
// sqlfence fetches where no PostgreSQL is installed (internal/pgbin, from the npm
// registry) carry initdb, pg_ctl and postgres only, so on a machine with nothing but
// Go a replica set copies the primary itself, the way PostgreSQL's documentation
// describes a low-level base backup: pg_backup_start on one session, a file copy of
// the running primary's data directory, pg_backup_stop on the same session, whose
// backup label goes into the copy. The copy may catch files mid-write; replaying the
// WAL from the label's checkpoint (full_page_writes is on) repairs them, and the
// standby streams that WAL from the primary, which keeps it (wal_keep_size).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// backupSkipped are the parts of a data directory a base backup leaves out (their
// directories are kept, empty): what the server rebuilds at start or must not
// carry over to another server.
var backupSkipped = map[string]bool{
	"pg_wal": true, "pg_replslot": true, "pg_dynshmem": true, "pg_notify": true, "pg_serial": true,
	"pg_snapshots": true, "pg_stat_tmp": true, "pg_subtrans": true,
}

var backupSkippedFiles = map[string]bool{
	"postmaster.pid": true, "postmaster.opts": true, "backup_label": true, "tablespace_map": true,
	"standby.signal": true, "recovery.signal": true,
}

// copyBackup makes dst a standby of primary that connects with conninfo: what
// pg_basebackup -R -X none would leave, with the WAL streamed at start instead.
func copyBackup(ctx context.Context, primary *Node, dst, conninfo string, owner *account) error {
	conn, err := pgx.Connect(ctx, primary.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("pgcluster: base backup: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fmt.Errorf("pgcluster: base backup: %w", err)
	}
	start, stop := "SELECT pg_backup_start('pgcluster', true)", "SELECT labelfile, spcmapfile FROM pg_backup_stop(false)"
	if version < 150000 {
		start, stop = "SELECT pg_start_backup('pgcluster', true, false)", "SELECT labelfile, spcmapfile FROM pg_stop_backup(false, false)"
	}
	if _, err := conn.Exec(ctx, start); err != nil {
		return fmt.Errorf("pgcluster: base backup: %w", err)
	}
	src := primary.data()
	if err := copyDataDir(src, dst); err != nil {
		return err
	}
	var label, spcmap string
	if err := conn.QueryRow(ctx, stop).Scan(&label, &spcmap); err != nil {
		return fmt.Errorf("pgcluster: base backup: %w", err)
	}
	files := map[string]string{"backup_label": label, "standby.signal": ""}
	if spcmap != "" {
		files["tablespace_map"] = spcmap
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dst, name), []byte(text), 0o600); err != nil {
			return fmt.Errorf("pgcluster: base backup: %w", err)
		}
	}
	if err := appendFile(filepath.Join(dst, "postgresql.auto.conf"), "primary_conninfo = '"+strings.ReplaceAll(conninfo, "'", "''")+"'\n"); err != nil {
		return err
	}
	if owner == nil {
		return nil
	}
	return filepath.WalkDir(dst, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return owner.chown(path)
	})
}

// copyDataDir copies the data directory src to dst (which must not exist), leaving
// out what backupSkipped and backupSkippedFiles name. A file the running server
// removes meanwhile is left out too.
func copyDataDir(src, dst string) error {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		parent := filepath.Base(filepath.Dir(rel))
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			if backupSkipped[rel] {
				if rel == "pg_wal" {
					return os.Mkdir(filepath.Join(target, "archive_status"), 0o700)
				}
				return fs.SkipDir
			}
			return nil
		case filepath.Dir(rel) == "." && backupSkippedFiles[rel], strings.HasPrefix(d.Name(), "pgsql_tmp"),
			d.Name() == "pg_internal.init", parent == "pgsql_tmp":
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, target)
	})
	if err != nil {
		return fmt.Errorf("pgcluster: base backup: copying %s: %w", src, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
