package version

import (
	"os"
	"strings"
	"testing"
)

// TestDefaultMatchesVersionFile keeps the version of an unstamped `go build` (and with it the
// operator's default --proxy-image) equal to the VERSION file the Makefile stamps releases from.
func TestDefaultMatchesVersionFile(t *testing.T) {
	data, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(data)); Version != want {
		t.Errorf("pkg/version.Version = %q, VERSION file says %q: change both", Version, want)
	}
}

func TestProxyImageIsPinned(t *testing.T) {
	if got := ProxyImage(); got != "ghcr.io/kafkalink/kafkalink-proxy:"+Version || strings.HasSuffix(got, ":latest") {
		t.Errorf("ProxyImage() = %q", got)
	}
}
