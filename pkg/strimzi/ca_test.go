package strimzi

import (
	"slices"
	"testing"
)

func TestCACertEntries(t *testing.T) {
	tests := map[string]struct {
		keys []string
		want []string
	}{
		"a Secret without entries still asks for ca.crt, so a missing entry is reported": {
			keys: nil,
			want: []string{"ca.crt"},
		},
		"Strimzi's cluster CA Secret outside a renewal is ca.crt only": {
			keys: []string{"ca.p12", "ca.password", "ca.crt"},
			want: []string{"ca.crt"},
		},
		"the old CA kept through a renewal is trusted after ca.crt": {
			keys: []string{"ca-2025-01-01T10-20-30Z.crt", "ca.crt", "ca.p12", "ca.password"},
			want: []string{"ca.crt", "ca-2025-01-01T10-20-30Z.crt"},
		},
		"several old CAs come in name order, which is date order": {
			keys: []string{"ca-2026-03-01T00-00-00Z.crt", "ca.crt", "ca-2025-01-01T00-00-00Z.crt"},
			want: []string{"ca.crt", "ca-2025-01-01T00-00-00Z.crt", "ca-2026-03-01T00-00-00Z.crt"},
		},
		"an old CA in another date form, written by hand, is still trusted": {
			keys: []string{"ca.crt", "ca-2025-01-01.crt"},
			want: []string{"ca.crt", "ca-2025-01-01.crt"},
		},
		"cert-manager's tls.crt is the server's own certificate, not a CA": {
			keys: []string{"tls.crt", "tls.key", "ca.crt"},
			want: []string{"ca.crt"},
		},
		"a user or broker certificate entry is not a CA": {
			keys: []string{"ca.crt", "my-user.crt", "my-cluster-kafka-0.crt", "user.crt"},
			want: []string{"ca.crt"},
		},
		"names that only look alike are not old CAs": {
			keys: []string{"ca.crt", "ca2.crt", "cafile.crt", "ca-.crt", "ca-2025.key", "xca-2025.crt"},
			want: []string{"ca.crt"},
		},
		"keys seen twice (Data and StringData) are listed once": {
			keys: []string{"ca-2025-01-01T00-00-00Z.crt", "ca.crt", "ca-2025-01-01T00-00-00Z.crt"},
			want: []string{"ca.crt", "ca-2025-01-01T00-00-00Z.crt"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := CACertEntries(tc.keys); !slices.Equal(got, tc.want) {
				t.Errorf("CACertEntries(%q) = %q, want %q", tc.keys, got, tc.want)
			}
		})
	}
}
