package operator

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
