package controller

import (
	"context"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// ReadDenial remembers the 401 (Unauthorized) or 403 (Forbidden) an informer's list or watch last
// got, until the informer lists or watches successfully again. A controller reports it in the
// status of the objects that read that cache, instead of waiting silently for a cache that the
// reflector keeps retrying.
type ReadDenial struct {
	inf  cache.SharedIndexInformer
	last atomic.Pointer[denial]
	// grace is how long refusals must go on before they count (ReadDenialGrace).
	grace time.Duration
}

// ReadDenialGrace is how long an informer's lists and watches must be refused before the
// refusal counts: a kube-apiserver that has just started answers 403 until its authorizer has
// read the RBAC objects, which is no reason to turn every connection to ReadForbidden and back
// (the fault suite's API-server restart found exactly that).
const ReadDenialGrace = 10 * time.Second

type denial struct {
	err error
	// rv is the informer's last synced resource version when the error came: a list or watch
	// that succeeds afterwards moves it on, which ends the denial.
	rv string
	// since is when the refusals at this resource version began.
	since time.Time
}

// WatchReadDenial installs a watch error handler on inf, which must not run yet, that records
// 401 and 403 answers and then does what client-go's default handler does (log them).
func WatchReadDenial(inf cache.SharedIndexInformer) *ReadDenial {
	d := &ReadDenial{inf: inf, grace: ReadDenialGrace}
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if IsReadDenied(err) {
			next := &denial{err: err, rv: inf.LastSyncResourceVersion(), since: time.Now()}
			if prev := d.last.Load(); prev != nil && prev.rv == next.rv {
				next.since = prev.since
			}
			d.last.Store(next)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return d
}

// Err is the 401 or 403 the informer's last list or watch got, nil when there was none, when the
// informer has listed or watched successfully since, or while the refusals have gone on for less
// than the grace.
func (d *ReadDenial) Err() error {
	if d == nil {
		return nil
	}
	p := d.last.Load()
	if p == nil {
		return nil
	}
	if d.inf.LastSyncResourceVersion() != p.rv {
		d.last.CompareAndSwap(p, nil)
		return nil
	}
	if time.Since(p.since) < d.grace {
		return nil
	}
	return p.err
}

// IsReadDenied reports whether the API server refused a request for want of authentication
// (401) or permission (403).
func IsReadDenied(err error) bool {
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}
