package filter

import (
	"crypto/x509"
	"slices"
	"time"
)

// Subject is who a client connection is, as Kroxylicious' Subject: the anonymous subject (the
// zero value) until a client certificate or a SASL exchange says otherwise. User is its one
// User principal, the name authorization rules match ("User with name = …").
type Subject struct {
	// User is the principal's name: a certificate's subject DN (RFC 2253, as Kafka and
	// Kroxylicious write it), a SASL user name, or a token's subject claim. Empty: anonymous.
	User string
	// Mechanism is how it was established: "TLS", or the SASL mechanism's name.
	Mechanism string
	// SANs are a client certificate's subject alternative names (DNS names, e-mail addresses,
	// URIs and IP addresses, as written in the certificate).
	SANs []string
	// Scopes are an OAuth token's scopes.
	Scopes []string
	// Expires is when the SASL session ends (KIP-368); zero when it does not.
	Expires time.Time
}

// Anonymous reports whether the subject is not known.
func (s Subject) Anonymous() bool { return s.User == "" }

// SubjectFromCertificate is the subject of a client that presented cert, verified against the
// listener's client CAs.
func SubjectFromCertificate(cert *x509.Certificate) Subject {
	s := Subject{User: cert.Subject.String(), Mechanism: "TLS"}
	s.SANs = append(s.SANs, cert.DNSNames...)
	s.SANs = append(s.SANs, cert.EmailAddresses...)
	for _, u := range cert.URIs {
		s.SANs = append(s.SANs, u.String())
	}
	for _, ip := range cert.IPAddresses {
		s.SANs = append(s.SANs, ip.String())
	}
	return s
}

// Subject is who the connection's client is: the anonymous subject until it is known.
func (c *Conn) Subject() Subject {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subject
}

// SetSubject records who the connection's client is: from its certificate when the relay
// starts, or from a SASL exchange a filter saw succeed (a re-authentication may change it).
func (c *Conn) SetSubject(s Subject) {
	s.SANs, s.Scopes = slices.Clone(s.SANs), slices.Clone(s.Scopes)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subject = s
}
