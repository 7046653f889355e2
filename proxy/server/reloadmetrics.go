package server

import (
	"errors"
	"io/fs"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// Reasons a changed configuration file is refused, the values of the reason label of
// kafkalink_proxy_config_rejected (a fixed set, so the label stays bounded).
const (
	// RejectedUnreadable: the file is missing or cannot be read.
	RejectedUnreadable = "unreadable"
	// RejectedUnsupportedVersion: the file's version is neither this proxy's nor the previous
	// one (config.ErrUnsupportedVersion): the operator and proxy are too far apart.
	RejectedUnsupportedVersion = "unsupported_version"
	// RejectedInvalid: the file does not parse or validate.
	RejectedInvalid = "invalid"
)

// rejectedReason classifies a readConfig error.
func rejectedReason(err error) string {
	switch {
	case errors.Is(err, config.ErrUnsupportedVersion):
		return RejectedUnsupportedVersion
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return RejectedUnreadable
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return RejectedUnreadable
		}
		return RejectedInvalid
	}
}

// reloadState remembers why the configuration file on disk is not the one served, if it is not:
// the proxy then keeps serving its last good configuration and says why, on /readyz and in
// kafkalink_proxy_config_rejected{reason}.
type reloadState struct {
	rejected *prometheus.GaugeVec
	mu       sync.Mutex
	err      error
}

func newReloadState(reg prometheus.Registerer) *reloadState {
	r := &reloadState{rejected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafkalink_proxy_config_rejected",
		Help: "1 while the configuration file on disk is refused and the proxy serves its last good configuration, by reason: unreadable, unsupported_version, invalid."},
		[]string{"reason"})}
	reg.MustRegister(r.rejected)
	return r
}

// refuse records that the file on disk was refused for err.
func (r *reloadState) refuse(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	r.rejected.Reset()
	r.rejected.WithLabelValues(rejectedReason(err)).Set(1)
}

// clear records that the file on disk is the one served; it reports whether it was refused before.
func (r *reloadState) clear() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.err != nil
	r.err = nil
	r.rejected.Reset()
	return was
}

// detail is the line /readyz adds while a file is refused, or "".
func (r *reloadState) detail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return ""
	}
	return "serving the last good configuration; the configuration file was refused (" + rejectedReason(r.err) + "): " + r.err.Error()
}
