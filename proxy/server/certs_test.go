package server

import (
	"crypto/tls"
	"testing"
	"time"
)

func TestSelectCertificate(t *testing.T) {
	pki := newPKI(t)
	now := time.Now()
	type spec struct {
		cn  string
		dns []string
		ttl time.Duration
	}
	tests := map[string]struct {
		certs []spec
		host  string
		want  string // common name of the chosen certificate, "" for none
	}{
		"an exact SAN matches": {
			certs: []spec{{cn: "x", dns: []string{"a-bootstrap.example.com"}, ttl: time.Hour}}, host: "a-bootstrap.example.com", want: "x",
		},
		"matching ignores case": {
			certs: []spec{{cn: "x", dns: []string{"A-Bootstrap.Example.com"}, ttl: time.Hour}}, host: "a-BOOTSTRAP.example.com", want: "x",
		},
		"a wildcard SAN covers one label": {
			certs: []spec{{cn: "w", dns: []string{"*.example.com"}, ttl: time.Hour}}, host: "a-broker-7.example.com", want: "w",
		},
		"a wildcard SAN does not cover two labels": {
			certs: []spec{{cn: "w", dns: []string{"*.example.com"}, ttl: time.Hour}}, host: "a.b.example.com",
		},
		"a wildcard SAN does not cover the bare domain": {
			certs: []spec{{cn: "w", dns: []string{"*.example.com"}, ttl: time.Hour}}, host: "example.com",
		},
		"the common name is used when there is no SAN": {
			certs: []spec{{cn: "a-bootstrap.example.com", ttl: time.Hour}}, host: "a-bootstrap.example.com", want: "a-bootstrap.example.com",
		},
		"a wildcard common name works without SANs": {
			certs: []spec{{cn: "*.example.com", ttl: time.Hour}}, host: "a-bootstrap.example.com", want: "*.example.com",
		},
		"the common name is ignored when SANs exist": {
			certs: []spec{{cn: "a-bootstrap.example.com", dns: []string{"other.example.com"}, ttl: time.Hour}}, host: "a-bootstrap.example.com",
		},
		"the certificate expiring last wins": {
			certs: []spec{{cn: "old", dns: []string{"*.example.com"}, ttl: time.Hour}, {cn: "new", dns: []string{"*.example.com"}, ttl: 48 * time.Hour},
				{cn: "mid", dns: []string{"*.example.com"}, ttl: 24 * time.Hour}},
			host: "a-broker-0.example.com", want: "new",
		},
		"a later certificate for another host does not win": {
			certs: []spec{{cn: "mine", dns: []string{"*.example.com"}, ttl: time.Hour}, {cn: "theirs", dns: []string{"*.other.com"}, ttl: 48 * time.Hour}},
			host:  "a-broker-0.example.com", want: "mine",
		},
		"an exact name beats nothing else but expiry": {
			certs: []spec{{cn: "exact", dns: []string{"a-broker-0.example.com"}, ttl: time.Hour}, {cn: "wild", dns: []string{"*.example.com"}, ttl: 2 * time.Hour}},
			host:  "a-broker-0.example.com", want: "wild",
		},
		"no certificate covers the host": {
			certs: []spec{{cn: "x", dns: []string{"x.example.com"}, ttl: time.Hour}}, host: "y.example.com",
		},
		"a trailing dot in the SNI is ignored": {
			certs: []spec{{cn: "x", dns: []string{"x.example.com"}, ttl: time.Hour}}, host: "x.example.com.", want: "x",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var certs []*tls.Certificate
			for _, s := range tc.certs {
				certs = append(certs, pki.issue(t, s.cn, s.dns, nil, now.Add(s.ttl)))
			}
			got := SelectCertificate(certs, tc.host)
			switch {
			case got == nil && tc.want != "":
				t.Fatalf("no certificate, want %q", tc.want)
			case got != nil && got.Leaf.Subject.CommonName != tc.want:
				t.Fatalf("got %q, want %q", got.Leaf.Subject.CommonName, tc.want)
			}
		})
	}
}
