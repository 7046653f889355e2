package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// deniedListWatch answers lists with deny until allowed is set, then with an empty list at
// resource version "7".
type deniedListWatch struct {
	deny    error
	allowed atomic.Bool
	lists   atomic.Int32
}

func (d *deniedListWatch) List(metav1.ListOptions) (runtime.Object, error) {
	d.lists.Add(1)
	if !d.allowed.Load() {
		return nil, d.deny
	}
	return &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
}

func (d *deniedListWatch) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// IsWatchListSemanticsUnSupported has the reflector list, as it does against API servers
// without streaming lists, rather than wait for a watch's initial events.
func (d *deniedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func TestReadDenialLastsUntilTheInformerListsAgain(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	cases := map[string]struct {
		err        error
		wantDenied bool
	}{
		"403 Forbidden is a denial":            {apierrors.NewForbidden(secrets, "", errors.New(`User "op" cannot list resource "secrets"`)), true},
		"401 Unauthorized is a denial":         {apierrors.NewUnauthorized("token expired"), true},
		"a 500 is not a denial":                {apierrors.NewInternalError(errors.New("etcd")), false},
		"a connection refused is not a denial": {errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lw := &deniedListWatch{deny: tc.err}
			inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{})
			d := WatchReadDenial(inf)
			d.grace = 0
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go inf.RunWithContext(ctx)
			waitFor(t, "the first list", func() bool { return lw.lists.Load() >= 2 })
			if got := d.Err() != nil; got != tc.wantDenied {
				t.Fatalf("denied = %v (err %v), want %v", got, d.Err(), tc.wantDenied)
			}
			if tc.wantDenied && !IsReadDenied(d.Err()) {
				t.Errorf("Err() = %v is not a 401 or 403", d.Err())
			}
			lw.allowed.Store(true)
			waitFor(t, "the informer to sync once allowed", inf.HasSynced)
			if err := d.Err(); err != nil {
				t.Errorf("still denied after a successful list: %v", err)
			}
		})
	}
}

// A refusal counts only once it has lasted the grace: a kube-apiserver that has just started
// refuses reads until its authorizer is ready.
func TestReadDenialCountsAfterTheGrace(t *testing.T) {
	lw := &deniedListWatch{deny: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: not ready"))}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{})
	d := WatchReadDenial(inf)
	d.grace = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	waitFor(t, "two refused lists", func() bool { return lw.lists.Load() >= 2 })
	if err := d.Err(); err != nil {
		t.Fatalf("a refusal younger than the grace counts: %v", err)
	}
	d.grace = 0
	if err := d.Err(); !IsReadDenied(err) {
		t.Fatalf("a refusal older than the grace does not count: %v", err)
	}
}

// waitFor polls cond for at most 60 s (the reflector's retry backoff grows to 30 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 600; i++ {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestNilReadDenialIsNoDenial(t *testing.T) {
	var d *ReadDenial
	if d.Err() != nil {
		t.Fatal("a nil ReadDenial reports a denial")
	}
	var o *OptionalInformer
	if o.ReadDenied() != nil {
		t.Fatal("a nil OptionalInformer reports a denial")
	}
}
