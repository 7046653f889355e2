package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probePort resolves a probe port, given by number or by the name of a container port.
func probePort(c *corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("port %d out of range", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	// The API accepts a numeric string here too.
	if n, err := strconv.Atoi(port.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	return 0, fmt.Errorf("container %q has no port named %q", c.Name, port.StrVal)
}

// prober runs one container's readiness probe against the local process.
type prober struct {
	container *corev1.Container
	probe     *corev1.Probe
	client    *http.Client
	podIP     string
}

// newProber probes a container at podIP (127.0.0.1 when empty), where a kubelet probes the pod.
func newProber(c *corev1.Container, podIP string) *prober {
	if podIP == "" {
		podIP = "127.0.0.1"
	}
	p := &prober{container: c, probe: c.ReadinessProbe, podIP: podIP}
	timeout := 2 * time.Second
	if p.probe != nil && p.probe.TimeoutSeconds > 0 {
		timeout = time.Duration(p.probe.TimeoutSeconds) * time.Second
	}
	p.client = &http.Client{
		Timeout: timeout,
		// The kubelet does not verify the certificate of an HTTPS probe, nor follow
		// redirects off the pod; neither do we.
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// supported reports whether the probe can run locally; exec and gRPC probes cannot (they
// would run inside the container) and count as passing.
func (p *prober) supported() bool {
	return p.probe != nil && (p.probe.HTTPGet != nil || p.probe.TCPSocket != nil)
}

// check runs the probe once. Success is what the kubelet calls success: an HTTP status in
// [200, 400), or a TCP connection that opens.
func (p *prober) check(ctx context.Context) (bool, string) {
	switch {
	case p.probe == nil:
		return true, "no readiness probe"
	case p.probe.HTTPGet != nil:
		g := p.probe.HTTPGet
		port, err := probePort(p.container, g.Port)
		if err != nil {
			return false, err.Error()
		}
		host := g.Host
		if host == "" {
			host = p.podIP
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		path := g.Path
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 400 {
			return true, resp.Status
		}
		return false, url + ": " + resp.Status
	case p.probe.TCPSocket != nil:
		port, err := probePort(p.container, p.probe.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		d := net.Dialer{Timeout: p.client.Timeout}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.podIP, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, "connected"
	}
	return true, "probe kind not supported locally, counted as passing"
}

// thresholds returns the probe's success and failure thresholds with the API defaults.
func (p *prober) thresholds() (success, failure int) {
	success, failure = 1, 3
	if p.probe != nil && p.probe.SuccessThreshold > 0 {
		success = int(p.probe.SuccessThreshold)
	}
	if p.probe != nil && p.probe.FailureThreshold > 0 {
		failure = int(p.probe.FailureThreshold)
	}
	return success, failure
}

// interval is the probe period, but never slower than max: tests should not wait ten seconds
// for a readiness flip the kubelet would notice at its leisure.
func (p *prober) interval(max time.Duration) time.Duration {
	if p.probe != nil && p.probe.PeriodSeconds > 0 {
		if d := time.Duration(p.probe.PeriodSeconds) * time.Second; d < max {
			return d
		}
	}
	return max
}
