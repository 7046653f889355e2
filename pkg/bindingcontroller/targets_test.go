package bindingcontroller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/member"
)

// A target's status message says what went wrong with its member's API server, never what that
// server (or one it redirects to) answered.
func TestTargetMessageQuotesNoServer(t *testing.T) {
	const body = "member-body-Wv27-do-not-quote"
	var elsewhereCalled atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhereCalled.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(body))
	}))
	defer elsewhere.Close()
	for name, tc := range map[string]struct {
		handler http.HandlerFunc
		want    string
	}{
		"403 with a body of its own": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(body))
		}, "member member-a: forbidden"},
		"a redirect to another server": {func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}, "redirect"},
	} {
		srv := httptest.NewServer(tc.handler)
		msg := targetMessage(t, srv.URL)
		srv.Close()
		if strings.Contains(msg, body) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: message %q, want it to say %q and quote nothing the server said", name, msg, tc.want)
		}
	}
	if n := elsewhereCalled.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests", n)
	}
}

// targetMessage is the status message of a connection's one target, in a member whose API server
// is server, once it has been delivered.
func targetMessage(t *testing.T, server string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	central := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "member-a-kubeconfig"},
		Data: map[string][]byte{member.KubeconfigKey: []byte(kubeconfig)}})
	recorded := make(chan struct{}, 10)
	tg := newTargetsWith(ctx, member.Config{Central: central, AllowedServers: []string{server}, Timeout: 5 * time.Second},
		func(cache.ObjectName) { recorded <- struct{}{} }, clock.RealClock{})
	conn := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "orders", UID: "u1"},
		Spec: kafkav1beta2.KafkaConnectionSpec{Targets: []kafkav1beta2.BindingTarget{{Name: "member-a",
			Cluster: kafkav1beta2.ClusterTarget{Secret: "member-a-kubeconfig"}}}}}
	tg.want(conn, map[string][]byte{"password": []byte("pw")}, false)
	select {
	case <-recorded:
	case <-time.After(15 * time.Second):
		t.Fatal("the target was not delivered")
	}
	st, _ := tg.statuses(conn)
	if len(st) != 1 {
		t.Fatalf("statuses: %+v", st)
	}
	return st[0].Message
}
