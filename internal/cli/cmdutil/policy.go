package cmdutil

import (
	"errors"
	"fmt"
	"os"

	"github.com/sqlfence/sqlfence"
)

// LoadPolicy loads the policy named by --policy, or by SQLFENCE_POLICY when the flag
// is empty.
func LoadPolicy(path string) (*sqlfence.Policy, error) {
	if path == "" {
		path = os.Getenv(sqlfence.PolicyEnv)
	}
	if path == "" {
		return nil, fmt.Errorf("no policy: give --policy PATH (for example --policy sqlfence.yaml) or set %s", sqlfence.PolicyEnv)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("policy file %s does not exist; give the path of your sqlfence policy with --policy", path)
		}
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return sqlfence.LoadPolicy(path)
}
