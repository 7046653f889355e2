package controller

import (
	"context"
	"sync/atomic"

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
}

type denial struct {
	err error
	// rv is the informer's last synced resource version when the error came: a list or watch
	// that succeeds afterwards moves it on, which ends the denial.
	rv string
}

// WatchReadDenial installs a watch error handler on inf, which must not run yet, that records
// 401 and 403 answers and then does what client-go's default handler does (log them).
func WatchReadDenial(inf cache.SharedIndexInformer) *ReadDenial {
	d := &ReadDenial{inf: inf}
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if IsReadDenied(err) {
			d.last.Store(&denial{err: err, rv: inf.LastSyncResourceVersion()})
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return d
}

// Err is the 401 or 403 the informer's last list or watch got, nil when there was none or the
// informer has listed or watched successfully since.
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
	return p.err
}

// IsReadDenied reports whether the API server refused a request for want of authentication
// (401) or permission (403).
func IsReadDenied(err error) bool {
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}
