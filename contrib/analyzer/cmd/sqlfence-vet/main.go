// Command sqlfence-vet runs sqlfence's analyzer: as a vet tool
// (go vet -vettool=$(which sqlfence-vet) -policy=$PWD/sqlfence.yaml ./...), on its
// own (sqlfence-vet -policy sqlfence.yaml ./..., with -json for JSON), or with
// -sarif for a SARIF log in the shape sqlfence check writes. -dsn DSN decides the
// statements with that database's catalog (with -migrations DIR, of the schema the
// directory's migrations make in an empty one); sqlfence check ./... runs it with -json.
package main

import (
	"os"

	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/sqlfence/sqlfence/contrib/analyzer"
)

func main() {
	if wantsSARIF(os.Args[1:]) {
		os.Exit(runSARIF(os.Args[1:], os.Stdout, os.Stderr))
	}
	singlechecker.Main(analyzer.Analyzer)
}
