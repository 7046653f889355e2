// Package strimzi models the few fields of Strimzi's Kafka and KafkaUser custom resources that
// kafkalink reads, and parses them from unstructured content (the map a dynamic informer holds).
//
// Strimzi's CRDs are not ours and their Go API is Java, so instead of importing types this package
// reads the fields it needs by hand, from both kafka.strimzi.io/v1 (Strimzi 1.x) and v1beta2, and
// from both listener forms of the Strimzi listener proposal (the old object form and the array).
// The content comes from users, so every parser returns a precise error instead of panicking.
//
// Map: types.go holds the model (Kafka, KafkaUser, listeners and their status) and Strimzi's
// names; parse.go the parsers from unstructured content; ca.go the CA-entries rule of Strimzi's
// CA Secrets (CACertEntries: ca.crt and the ca-<date>.crt a renewal keeps), which both the
// binding truststore and the gateway's backend trust apply.
package strimzi
