// Package binding computes a KafkaConnection's binding: which listener of a Strimzi Kafka the
// connection uses and the data of its servicebinding.io/kafka Secret (addresses, security
// protocol, SCRAM or mTLS credentials, PEM, PKCS12 and JKS stores). A connection may instead name
// a KafkaRoute: BuildRoute (route.go) then binds the gateway listener and route hostname, with
// the listener certificate's CA and the same credential assembly.
//
// Everything here is pure: no clients, no clock, no globals. The controller gathers the Kafka,
// KafkaUser and Secrets from its listers into an Input, calls Build, and either applies the
// Secret data or puts the returned Failure's reason and message into the Ready condition. Equal
// inputs give byte-identical outputs, so an unchanged connection never rewrites its Secret.
//
// Map: listener.go chooses a Strimzi listener (ChooseListener); route.go chooses a gateway
// listener and hostname (ChooseRoute) and the CA a route binding trusts, reading the gateway
// model's facts (parent gateways, parameters, hostnames, advertised port, ReferenceGrants) from
// pkg/gatewaymodel, never from the translator; secret.go assembles the Secret (Build,
// AssembleSecret) with the CA entries of strimzi.CACertEntries; stores.go and cache.go write
// and memoize the PKCS12 and JKS stores; failure.go lists the reasons.
package binding
