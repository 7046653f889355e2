package strimzi

import (
	"sort"
	"strings"
)

// CACertKey is the entry of a CA Secret that holds the current CA certificate. Strimzi's
// <cluster>-cluster-ca-cert Secret and cert-manager's Secrets both use it.
const CACertKey = "ca.crt"

// CACertEntries lists the entries of a CA Secret (given its keys, in any order, repeats
// allowed) that hold CA certificates to trust: ca.crt first, then, in name order, every
// ca-<date>.crt.
//
// When Strimzi renews a cluster CA by replacing its key, it writes the new certificate to ca.crt
// and keeps the old one in the same Secret as ca-YYYY-MM-DDTHH-MM-SSZ.crt until every broker
// presents a certificate signed by the new key; its documentation asks users who renew their own
// CA to do the same. A client that trusted only ca.crt would refuse the brokers not yet rolled.
//
// Only the ca- prefix is read. Other *.crt entries are not CAs: cert-manager's tls.crt is the
// server's own certificate (a trust anchor of a leaf would trust only that leaf and hide the real
// chain), and Strimzi's user and broker Secrets hold <name>.crt leaves. A CA renewed by hand under
// another name (ca2.crt) is not Strimzi's convention and is not guessed at.
func CACertEntries(keys []string) []string {
	var older []string
	seen := map[string]bool{}
	for _, k := range keys {
		if IsOldCACertKey(k) && !seen[k] {
			seen[k] = true
			older = append(older, k)
		}
	}
	sort.Strings(older)
	return append([]string{CACertKey}, older...)
}

// IsOldCACertKey reports whether a CA Secret entry is a CA certificate kept through a renewal:
// ca-<anything>.crt, such as ca-2025-01-01T10-20-30Z.crt. The date is not checked, so a hand
// renewal that writes ca-<expiry>.crt in another date form is still trusted.
func IsOldCACertKey(key string) bool {
	return strings.HasPrefix(key, "ca-") && strings.HasSuffix(key, ".crt") && len(key) > len("ca-.crt")
}
