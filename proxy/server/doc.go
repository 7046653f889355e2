// Package server runs kafkalink-proxy: it binds the configured listeners, routes each
// connection to a virtual cluster and broker by TLS SNI (or by port on a plain listener),
// relays Kafka frames through package kafka, serves the management port, reloads the
// configuration and key material when they change on disk, and drains on shutdown.
//
// Files, in the order a connection meets them:
//   - server.go: Server, Run and the reload poll, the routing snapshot of a listener (route: SNI
//     to virtual cluster and node id), accepting (serve, admit), the management port, shutdown.
//   - apply.go: apply, a configuration in named steps: load listeners and key pairs, load
//     virtual clusters (with their filter chains, kept across reloads), bind, commit.
//   - guard.go: what a connection may cost before it proves to be a Kafka client: per-source
//     caps, the handshake rate, the first-request deadline, write deadlines.
//   - conn.go: handle (route, first request, upstream, register, relay) and the relay's two sides.
//   - handshake.go: the TLS handshake and the SNI match (matchSNI); certs.go: key pairs, CA
//     pools and which certificate covers a name.
//   - lazyupstream.go: the upstream of a virtual cluster whose filters authenticate clients
//     (SaslTermination), dialed by the first forwarded request and authenticated as the proxy.
//   - upstream.go: upstream TLS and dialing, and broker addresses learnt from the cluster or
//     discovered (discovery.go: the discovery credential's SASL).
//   - filters.go: the process's filter memory budget and a connection's view of its chain.
//   - splice.go: kernel splicing between plain TCP sockets; usertimeout_*.go: TCP_USER_TIMEOUT.
//   - metrics.go, reloadmetrics.go: the Prometheus metrics, and why a configuration on disk is
//     not the one served.
package server
