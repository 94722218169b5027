package golangci_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis/analysistest"

	_ "github.com/sqlfence/sqlfence/contrib/analyzer/golangci"
)

// TestPlugin builds the plugin as golangci-lint does, from its registered name and
// the settings of .golangci.yml, and runs its analyzer on the analyzer's test
// application.
func TestPlugin(t *testing.T) {
	newPlugin, err := register.GetPlugin("sqlfence")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newPlugin(map[string]any{"policy": "../../../testdata/sqlfence.yaml", "polcy": "x"}); err == nil || !strings.Contains(err.Error(), "policy: PATH") {
		t.Errorf("an unknown setting: %v", err)
	}
	if _, err := newPlugin(map[string]any{"policy": "missing.yaml"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing policy: %v", err)
	}
	p, err := newPlugin(map[string]any{"policy": "../../../testdata/sqlfence.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if p.GetLoadMode() != register.LoadModeTypesInfo {
		t.Errorf("load mode %q", p.GetLoadMode())
	}
	analyzers, err := p.BuildAnalyzers()
	if err != nil || len(analyzers) != 1 {
		t.Fatalf("BuildAnalyzers: %v, %v", analyzers, err)
	}
	testdata, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	analysistest.Run(t, testdata, analyzers[0], "app")
}
