package cmdutil

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteJSON prints v as indented JSON, with <, > and & as they are.
func WriteJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// Plural returns one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// RelPath names a file relative to the working directory when it is under it, as
// sqlfence check names the files it was given and code scanning resolves paths
// against the checkout; other paths are kept as they are.
func RelPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
