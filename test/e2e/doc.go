// Package e2e holds kafkalink's end-to-end tests. Everything is real except the kubelet and the
// Kafka brokers: a local control plane (etcd, kube-apiserver, kube-controller-manager without
// its deployment controllers), the kafkalink-operator binary under exactly the RBAC in
// manifests/rbac, the local kubelet runner (test/kubelet) running the kafkalink-proxy binary
// from the Deployment the operator writes, and kfake with TLS and SCRAM-SHA-512 behind a
// Strimzi-shaped Kafka. Clients are franz-go and Debian's kcat, configured only from the
// binding Secrets' files.
//
// The tests live in e2e_test.go; this file only names the package.
package e2e
