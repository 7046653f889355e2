// Package version holds kafkalink's release version and source revision. Release builds set both
// with the linker:
//
//	go build -ldflags "-X github.com/kafkalink/kafkalink/pkg/version.Version=0.1.0 \
//	  -X github.com/kafkalink/kafkalink/pkg/version.Revision=$(git rev-parse HEAD)"
//
// The Makefile does this from the VERSION file. A plain `go build` keeps the defaults below,
// and TestDefaultMatchesVersionFile keeps Version equal to the VERSION file.
package version

import "fmt"

var (
	// Version is the release version (semantic versioning, without a leading "v").
	Version = "0.1.0-dev"
	// Revision is the source control revision the binary was built from.
	Revision = "unknown"
)

// ProxyImageRepository is where the kafkalink-proxy image is published.
const ProxyImageRepository = "ghcr.io/kafkalink/kafkalink-proxy"

// ProxyImage is the kafkalink-proxy image of this release, so an operator and the proxies it
// deploys never differ in version by accident.
func ProxyImage() string { return ProxyImageRepository + ":" + Version }

// String is the one line printed by --version and logged at start.
func String(program string) string {
	return fmt.Sprintf("%s version %s (revision %s)", program, Version, Revision)
}
