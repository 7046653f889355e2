package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	filterall "github.com/kafkalink/kafkalink/proxy/filter/all"
)

// The command wires the proxy's filters in: --proxy-filter-types defaults to, and its help names,
// the types kafkalink-proxy implements, a value replaces them, and configurations are checked.
func TestProxyFilterDefaults(t *testing.T) {
	fs := flag.NewFlagSet("kafkalink-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := newOptions(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if want := filterall.Types(); len(want) == 0 || !slices.Equal(opts.ProxyFilterTypes, want) {
		t.Errorf("ProxyFilterTypes = %v, want %v", opts.ProxyFilterTypes, want)
	}
	if opts.CheckFilter == nil {
		t.Error("CheckFilter not set")
	}
	if usage := fs.Lookup("proxy-filter-types").Usage; !strings.Contains(usage, "(default: kafkalink-proxy's, "+strings.Join(filterall.Types(), ",")+")") {
		t.Errorf("usage %q does not name the default types", usage)
	}
	if err := fs.Parse([]string{"--proxy-filter-types=A, B"}); err != nil || !slices.Equal(opts.ProxyFilterTypes, []string{"A", "B"}) {
		t.Errorf("--proxy-filter-types=A, B: %v, %v", err, opts.ProxyFilterTypes)
	}
}
