// Package filter is kafkalink-proxy's filter chain: per virtual cluster, the KafkaFilters of its
// route rule, in order, see the requests of the API keys they want (and those requests'
// responses) decoded with franz-go's kmsg types.
//
// The contract:
//   - A Filter is built once per virtual cluster from its KafkaFilter config (Factory), after the
//     operator's $(secretFile:…) and $(secretDir:…) placeholders became mounted file paths. A
//     filter that cannot be built fails its virtual cluster closed: it is not served, and the
//     others are.
//   - Requests pass the filters in route order, after the proxy's own handling of the frame
//     (limits, ApiVersions capping); responses pass them in reverse order, before the proxy
//     rewrites broker addresses.
//   - A filter may change a message in place, answer a request itself (Exchange.Answer: the
//     request is not forwarded, and later filters do not see it), or fail it with a Kafka error
//     code by answering with an error response. An error returned closes the connection.
//   - State a filter needs between a request and its response goes in the Exchange.
//   - A filter that left a request as it was and needs nothing of its response says so
//     (Exchange.RequestUnchanged, ResponseNotNeeded): when every filter that saw it does, the
//     client's frame is forwarded as sent and the response relayed undecoded. MultiTenant's
//     Produce and Fetch by topic id take this path.
//   - A filter that acts when a connection starts implements Opener; Conn.ExpireAt ends the
//     connection between requests (ConnectionExpiration).
//   - Who the client is (Conn.Subject) comes from its certificate or a SASL filter
//     (subject.go); EntityIsolation names groups and transactional ids after it.
//   - Frames of keys no filter wants, and every frame of a virtual cluster without filters, are
//     never decoded: the hot path stays the byte-copying one.
//   - A chain lives as long as its virtual cluster's filters, the files they read and the limits
//     stay the same: reloads reuse it (and what its filters cache), and close it once replaced.
//
// Files:
//   - registry.go: RegisterTyped (each filter's config as a Go type, decoded strictly once, built
//     with an Env: the files it may read and its virtual cluster's name), New, Check (the
//     operator's check of a KafkaFilter), Types.
//   - metrics.go: RegisterCollectors, the filter packages' Prometheus collectors the proxy exposes.
//   - filter.go: Filter, Exchange, Chain and its per-connection Conn: decoding a request or
//     response, the proxy's own rules before filters run (versions capped at what kmsg decodes,
//     Fetch sizes lowered by capFetch, responses made to fit by fitFetch), error answers.
//   - topicids.go: topic ids named for the filters, from what Metadata responses taught the
//     chain; a Produce of an unknown id answered UNKNOWN_TOPIC_ID, fetched partitions of one
//     emptied.
//   - share.go: ShareFetch sizes lowered and responses made to fit; DropShareRecords.
//   - lifecycle.go: Chains and Plan, keeping chains across reloads and closing retired ones.
//   - budget.go: the process-wide memory Budget, Limits, and each request's Allowance.
//   - produce.go: Refusals, refusing some partitions of a Produce and forwarding the rest.
//   - gate.go: Gate, a filter that sees every request of a connection until it opens its gate
//     (the identity filters: a client that has not authenticated); Conn.Wants is every key then.
//   - terminate.go: Terminator (a filter that authenticates clients itself, so the proxy dials
//     upstream only for a forwarded request), the brokers' last ApiVersions (LearnVersions,
//     LocalApiVersions), Conn.MaxFrame (512 KiB while a gate is closed), Conn.OnEnd/End.
//
// Sub-packages: records (record batches: decode within an allowance, decompress, re-encode),
// encryption (RecordEncryption), validation (RecordValidation), authorization (Authorization,
// with the rules of package proxy/acl), saslinspection (SaslInspection), sasltermination
// (SaslTermination), oauthbearer (OauthBearerValidation), tenant (MultiTenant, EntityIsolation),
// expiration (ConnectionExpiration), protocollogger (ProtocolLogger), all (registers every
// filter).
package filter
