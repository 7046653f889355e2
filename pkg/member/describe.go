package member

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownError is an error the operator wrote itself, from nothing a member API server said: Describe
// shows it as it is.
type ownError struct{ error }

func (e ownError) Unwrap() error { return e.error }

// ownf is fmt.Errorf for an ownError.
func ownf(format string, args ...any) error { return ownError{fmt.Errorf(format, args...)} }

// Describe is err as a status message shows it (KafkaConnection status.targets[].message,
// KafkaGateway status.members[].message): the operator's own words (such as "applying Deployment
// x: "), then the class of what went wrong with the member API server, never what that server
// said. A server's answer is the tenant's to choose (its kubeconfig picks the server), and a
// redirect or an error page could otherwise carry anything into a status; the class is enough to
// act on, and the operator logs the full error at --v=2.
//
// Classes: "cannot reach <origin>: connection refused" (and timed out, host name not found...),
// "TLS error with <origin>: ...", "<origin> answered with an HTTP redirect...", and for an API
// answer "forbidden (HTTP 403)", "unauthorized (HTTP 401)", "not found (HTTP 404)", "HTTP <code>".
// URLs are shown as scheme://host:port only.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if class, ok := classify(e); ok {
			return prefix(msg, e.Error()) + class
		}
		if errors.Unwrap(e) == nil {
			return prefix(msg, e.Error()) + "an unexpected answer or error, not shown here (the operator logs it at --v=2)"
		}
	}
	return ""
}

// prefix is what msg says before inner's message, the words of the errors wrapping inner; "" when
// msg does not end with it.
func prefix(msg, inner string) string {
	if p, ok := strings.CutSuffix(msg, inner); ok {
		return p
	}
	return ""
}

// classify is the class of one error of a chain, false when it is neither the operator's own nor
// one that Describe knows.
func classify(err error) (string, bool) {
	switch e := err.(type) { //nolint:errorlint // one error of the chain at a time: Describe unwraps
	case ownError:
		return e.Error(), true
	case *url.Error:
		return transportClass(displayOrigin(e.URL), e.Err), true
	case apierrors.APIStatus:
		return statusClass(e.Status()), true
	}
	// The error itself, not one it wraps: the loop in Describe unwraps, keeping the words around.
	if errors.Unwrap(err) == nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return "timed out", true
		case errors.Is(err, context.Canceled):
			return "canceled", true
		}
	}
	if _, ok := err.(net.Error); ok { //nolint:errorlint // this error of the chain, not one it wraps
		return transportClass("the API server", err), true
	}
	return "", false
}

// transportClass is the class of an error of the connection to origin.
func transportClass(origin string, err error) string {
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		header     tls.RecordHeaderError
		alert      tls.AlertError
		dns        *net.DNSError
		ne         net.Error
		tlsProblem string
	)
	switch {
	case errors.As(err, &unknownCA):
		tlsProblem = "the certificate is signed by an authority the kubeconfig's certificate-authority-data does not hold"
	case errors.As(err, &hostname):
		tlsProblem = "the certificate is not for this host name"
	case errors.As(err, &invalid):
		tlsProblem = "the certificate is not valid (expired, not yet valid, or not for a server)"
	case errors.As(err, &verify):
		tlsProblem = "the certificate could not be verified"
	case errors.As(err, &header):
		tlsProblem = "the server does not speak TLS"
	case errors.As(err, &alert):
		tlsProblem = "the server refused the handshake (the kubeconfig's client certificate?)"
	}
	if tlsProblem != "" {
		return "TLS error with " + origin + ": " + tlsProblem
	}
	reason := "unreachable"
	switch {
	case errors.Is(err, ErrRedirect):
		return origin + " " + ErrRedirect.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		reason = "timed out"
	case errors.Is(err, context.Canceled):
		reason = "canceled"
	case errors.As(err, &dns):
		reason = "host name not found"
		if !dns.IsNotFound {
			reason = "host name lookup failed"
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		reason = "connection closed by the server"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		reason = "no route to host"
	}
	return "cannot reach " + origin + ": " + reason
}

// statusClass is the class of an API server's answer, from its HTTP code (and, for 409, whether
// its reason is AlreadyExists): never its message or details.
func statusClass(s metav1.Status) string {
	var class string
	switch s.Code {
	case 0:
		return "an unexpected answer, not shown here (the operator logs it at --v=2)"
	case 400:
		class = "bad request"
	case 401:
		class = "unauthorized: the member does not accept the kubeconfig's credentials (an expired token?)"
	case 403:
		class = "forbidden: the kubeconfig's identity may not do this in the member (see its RBAC)"
	case 404:
		class = "not found"
	case 405:
		class = "method not allowed"
	case 409:
		class = "conflict"
		if s.Reason == metav1.StatusReasonAlreadyExists {
			class = "already exists"
		}
	case 410:
		class = "gone"
	case 413:
		class = "request too large"
	case 422:
		class = "invalid: the member refused the object"
	case 429:
		class = "too many requests"
	case 500:
		class = "internal error of the member's API server"
	case 503:
		class = "service unavailable"
	case 504:
		class = "timed out in the member's API server"
	default:
		return fmt.Sprintf("HTTP %d", s.Code)
	}
	return fmt.Sprintf("%s (HTTP %d)", class, s.Code)
}
