package pgbin

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cacheRoot is where fetched servers are kept: SQLFENCE_PG_CACHE, or the user's
// cache directory. Root's is /var/cache/sqlfence instead: as root the server runs as
// the postgres account (it refuses root), which cannot enter root's home.
func cacheRoot() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/sqlfence", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (%v); set %s", err, CacheEnv)
	}
	return filepath.Join(d, "sqlfence"), nil
}

// releaseDir is where rel is unpacked: the package's contents, native/bin holding
// the server.
func releaseDir(rel Release) (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "postgresql", platform()+"-"+rel.Version), nil
}

// cached returns rel's binaries when an earlier run fetched them.
func cached(rel Release) (string, bool) {
	dir, err := releaseDir(rel)
	if err != nil {
		return "", false
	}
	bin := filepath.Join(dir, "native", "bin")
	return bin, hasServer(bin)
}

// fetchTimeout bounds one download: the tarballs are 30 to 90 MB.
const fetchTimeout = 10 * time.Minute

// fetch downloads rel, verifies it, and unpacks it into the cache; other processes
// fetching at the same time (go test runs packages in parallel) wait for the first.
func fetch(ctx context.Context, rel Release, progress io.Writer) (string, error) {
	dir, err := releaseDir(rel)
	if err != nil {
		return "", err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		// Enterable by the postgres account whatever root's umask.
		os.Chmod(filepath.Dir(parent), 0o755)
		os.Chmod(parent, 0o755)
	}
	unlock, err := lock(filepath.Join(parent, "."+filepath.Base(dir)+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	bin := filepath.Join(dir, "native", "bin")
	if hasServer(bin) {
		return bin, nil // fetched by another process while this one waited
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	p := newProgress(progress, fmt.Sprintf("PostgreSQL %s (%s@%s)", rel.Version, rel.Package, rel.Version))
	tgz, err := os.CreateTemp(parent, ".download-*.tgz")
	if err != nil {
		return "", err
	}
	defer os.Remove(tgz.Name())
	defer tgz.Close()
	if err := download(ctx, rel, tgz, p); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, ".unpack-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700 would shut out the postgres account
		return "", err
	}
	if _, err := tgz.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := unpack(tgz, tmp); err != nil {
		return "", fmt.Errorf("unpacking %s: %w", rel.Tarball(), err)
	}
	if err := restoreSymlinks(tmp); err != nil {
		return "", fmt.Errorf("%s: %w", rel.Tarball(), err)
	}
	if !hasServer(filepath.Join(tmp, "native", "bin")) {
		return "", fmt.Errorf("%s holds no native/bin/initdb and native/bin/postgres", rel.Tarball())
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	p.step("unpacked into " + dir)
	return bin, nil
}

// download writes rel's tarball to w and checks it against the pinned integrity.
func download(ctx context.Context, rel Release, w io.Writer, p *progress) error {
	algo, want, ok := strings.Cut(rel.Integrity, "-")
	if !ok || algo != "sha512" {
		return fmt.Errorf("integrity %q is not sha512-<base64>", rel.Integrity)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rel.Tarball(), nil)
	if err != nil {
		return err
	}
	p.step("downloading " + rel.Tarball())
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", rel.Tarball(), resp.Status)
	}
	h := sha512.New()
	n, err := io.Copy(io.MultiWriter(w, h), p.reader(resp.Body, resp.ContentLength))
	p.done()
	if err != nil {
		return fmt.Errorf("GET %s: %w", rel.Tarball(), err)
	}
	if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s is not the published package: its sha512 is %s, the registry published %s for %s@%s; not using it",
			rel.Tarball(), got, want, rel.Package, rel.Version)
	}
	p.step(fmt.Sprintf("downloaded %.1f MB in %v; sha512 matches the registry's", float64(n)/1e6, time.Since(start).Round(100*time.Millisecond)))
	return nil
}

// unpack extracts an npm tarball (every entry under package/) into dir. Entries
// that would land outside dir, and anything but files and directories, are refused.
func unpack(r io.Reader, dir string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name, ok := strings.CutPrefix(h.Name, "package/")
		if !ok || !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q is outside the package", h.Name)
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			// Readable by all (as root, the postgres account runs the server),
			// executable where the package says so.
			mode := fs.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			os.Chmod(path, mode) // past the umask
		default:
			return fmt.Errorf("entry %q: type %q is not a file or a directory", h.Name, h.Typeflag)
		}
	}
}

// restoreSymlinks recreates the libraries' symlinks, which npm tarballs cannot
// carry: the package lists them in native/pg-symlinks.json, each a source file and
// the target path to link to it, both relative to the package (its postinstall
// script, scripts/hydrate-symlinks.js, does the same with Node).
func restoreSymlinks(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "native", "pg-symlinks.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a platform without shared-library versions (Windows) has none
	}
	if err != nil {
		return err
	}
	var links []struct{ Source, Target string }
	if err := json.Unmarshal(data, &links); err != nil {
		return fmt.Errorf("native/pg-symlinks.json: %w", err)
	}
	for _, l := range links {
		if !filepath.IsLocal(l.Source) || !filepath.IsLocal(l.Target) {
			return fmt.Errorf("native/pg-symlinks.json: link %s -> %s is outside the package", l.Target, l.Source)
		}
		target := filepath.Join(dir, filepath.FromSlash(l.Target))
		// Relative, so that the cache can move.
		rel, err := filepath.Rel(filepath.Dir(target), filepath.Join(dir, filepath.FromSlash(l.Source)))
		if err != nil {
			return err
		}
		if err := os.Symlink(rel, target); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}
