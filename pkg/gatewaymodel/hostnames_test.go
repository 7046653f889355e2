package gatewaymodel

import (
	"strings"
	"testing"
)

func TestResolveHost(t *testing.T) {
	tests := map[string]struct {
		pattern   string
		bootstrap string
		exposure  Exposure
		err       string
	}{
		"the cluster domain gains the gateway's namespace":  {pattern: "c-%.svc.cluster.local", bootstrap: "c-bootstrap.ns.svc.cluster.local", exposure: ExposeInCluster},
		"the gateway's namespace written out is in-cluster": {pattern: "c-%.ns.svc.cluster.local", bootstrap: "c-bootstrap.ns.svc.cluster.local", exposure: ExposeInCluster},
		"another namespace is refused":                      {pattern: "c-%.other.svc.cluster.local", err: `names namespace "other"`},
		"an ingress subdomain is an OpenShift Route":        {pattern: "c-%.x.apps.example.com", bootstrap: "c-bootstrap.x.apps.example.com", exposure: ExposeOpenShiftRoute},
		"anything else is a TLSRoute when parents are set":  {pattern: "c-%.example.org", bootstrap: "c-bootstrap.example.org", exposure: ExposeTLSRoute},
		"the seed's slip svc.ns.cluster.local is not in-cluster": {
			pattern: "foo-%.svc.ns.cluster.local", bootstrap: "foo-bootstrap.svc.ns.cluster.local", exposure: ExposeTLSRoute,
		},
		"a percent outside the first label is refused": {pattern: "c.%.example.com", err: "first label"},
		"no prefix is refused":                         {pattern: "%.example.com", err: "prefix"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h, err := ResolveHost(tc.pattern, "ns", "svc.cluster.local", []string{"apps.example.com"}, true)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Bootstrap != tc.bootstrap || h.Exposure != tc.exposure {
				t.Errorf("got %s (%s), want %s (%s)", h.Bootstrap, h.Exposure, tc.bootstrap, tc.exposure)
			}
		})
	}
}
