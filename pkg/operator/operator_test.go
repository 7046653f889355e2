package operator

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/pkg/gateway"
)

func TestHealthHandler(t *testing.T) {
	cases := map[string]struct {
		path           string
		ready, leading bool
		wantCode       int
		wantBody       string
	}{
		"readyz fails until the caches have synced":      {"/readyz", false, false, http.StatusServiceUnavailable, "informer caches not synced"},
		"readyz says a synced standby is not the leader": {"/readyz", true, false, http.StatusOK, "ok (leader: false)"},
		"readyz says a synced leader leads":              {"/readyz", true, true, http.StatusOK, "ok (leader: true)"},
		"healthz without leader election is ok":          {"/healthz", false, false, http.StatusOK, "ok"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := healthHandler(probes{ready: func() bool { return tc.ready }, leading: func() bool { return tc.leading }})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.wantCode || strings.TrimSpace(rec.Body.String()) != tc.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tc.path, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
}

// --max-generated-objects-per-gateway defaults to the translator's default and takes only a whole
// number of at least 1.
func TestMaxGeneratedObjectsFlag(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if o.MaxGeneratedObjectsPerGateway != gateway.DefaultMaxGeneratedObjectsPerGateway {
		t.Errorf("default %d, want %d", o.MaxGeneratedObjectsPerGateway, gateway.DefaultMaxGeneratedObjectsPerGateway)
	}
	if err := fs.Parse([]string{"--max-generated-objects-per-gateway=4096"}); err != nil || o.MaxGeneratedObjectsPerGateway != 4096 {
		t.Errorf("4096: %v, %d", err, o.MaxGeneratedObjectsPerGateway)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if err := fs.Parse([]string{"--max-generated-objects-per-gateway=" + bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
