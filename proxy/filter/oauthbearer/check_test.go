package oauthbearer_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/filter/all"
	"github.com/kafkalink/kafkalink/proxy/oauth/oauthtest"
)

// TestOperatorCheck: the operator's config check (filter/all.Check, with the files of the
// Secrets the placeholders name) builds the filter, reading the JWKS CA, and opens no connection.
func TestOperatorCheck(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	defer srv.Close()
	iss := oauthtest.NewIssuer(t)
	const caPath = "/opt/kroxylicious/secrets/filter/oauth-ca/ca.crt"
	cfg := `{"jwksEndpointUrl":"` + srv.URL + `/jwks","jwksEndpointCaFile":"` + caPath + `","expectedAudience":"kafka"}`
	if err := all.Check("OauthBearerValidation", []byte(cfg), map[string][]byte{caPath: iss.CAPEM}); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the check made %d requests to the JWKS endpoint", n)
	}
	err := all.Check("io.kroxylicious.filter.oauthbearer.OauthBearerValidation", []byte(cfg), nil)
	if err == nil || !strings.Contains(err.Error(), "jwksEndpointCaFile") {
		t.Fatalf("without the Secret's file: %v", err)
	}
	if !slices.Contains(all.Types(), "OauthBearerValidation") {
		t.Fatalf("--proxy-filter-types' default %v lacks OauthBearerValidation", all.Types())
	}
}
