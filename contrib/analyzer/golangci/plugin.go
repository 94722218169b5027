// Package golangci is sqlfence's analyzer as a golangci-lint module plugin. Build a
// custom golangci-lint with it (golangci-lint custom, from a .custom-gcl.yml that
// lists github.com/sqlfence/sqlfence/contrib/analyzer with import path
// github.com/sqlfence/sqlfence/contrib/analyzer/golangci) and enable it in
// .golangci.yml:
//
//	linters:
//	  enable: [sqlfence]
//	  settings:
//	    custom:
//	      sqlfence:
//	        type: module
//	        settings:
//	          policy: sqlfence.yaml
//	          dsn: postgres://…   # optional: decide with this database's catalog
//	          migrations: migrations/   # optional, with dsn of an empty scratch database
package golangci

import (
	"fmt"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence/contrib/analyzer"
)

func init() { register.Plugin("sqlfence", New) }

// Settings are the plugin's settings in .golangci.yml.
type Settings struct {
	// Policy is the path of the sqlfence policy file, relative to where golangci-lint
	// runs; "" reads $SQLFENCE_POLICY.
	Policy string `json:"policy"`
	// DSN, when set, is a database whose catalog decides the statements, as the
	// driver decides them under resolve: catalog (sqlfence-vet's -dsn); read once per
	// golangci-lint run.
	DSN string `json:"dsn"`
	// Migrations, with DSN of an empty scratch database, is a directory of up
	// migrations applied there, in a transaction rolled back once the catalog is read
	// (sqlfence-vet's -migrations).
	Migrations string `json:"migrations"`
}

// New is the plugin's constructor, as golangci-lint calls it with the settings.
func New(settings any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](settings)
	if err != nil {
		return nil, fmt.Errorf("sqlfence plugin settings: %w (the settings are policy: PATH, dsn: DSN and migrations: DIR)", err)
	}
	pol, err := analyzer.LoadPolicy(s.Policy)
	if err != nil {
		return nil, err
	}
	a := analyzer.New(pol)
	for flag, v := range map[string]string{"dsn": s.DSN, "migrations": s.Migrations} {
		if v == "" {
			continue
		}
		if err := a.Flags.Set(flag, v); err != nil {
			return nil, err
		}
	}
	return plugin{a}, nil
}

type plugin struct{ a *analysis.Analyzer }

func (p plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) { return []*analysis.Analyzer{p.a}, nil }

// GetLoadMode asks for type information: the analyzer reads go/types constants and
// method sets.
func (plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
