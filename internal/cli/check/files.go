package check

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// collectFiles expands the command line's paths into the SQL and Go files to check.
func collectFiles(paths []string, withGo, withTests bool) (sqlFiles, goFiles []string, err error) {
	seen := map[string]bool{}
	add := func(p string, isGo bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		if isGo {
			goFiles = append(goFiles, p)
		} else {
			sqlFiles = append(sqlFiles, p)
		}
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("%s: no such file or directory", root)
			}
			return nil, nil, err
		}
		if !info.IsDir() {
			// A file named on the command line is checked whatever its name: a .go
			// file as Go, anything else as SQL.
			add(root, strings.HasSuffix(root, ".go"))
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if p != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
					strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case strings.HasSuffix(name, ".sql"):
				add(p, false)
			case withGo && strings.HasSuffix(name, ".go") && (withTests || !strings.HasSuffix(name, "_test.go")):
				add(p, true)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return sqlFiles, goFiles, nil
}
