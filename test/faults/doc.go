// Package faults holds kafkalink's fault suite: control-plane tests that run the real operator
// binary (operator_*_test.go) and the real proxy (proxy_*_test.go) through the faults every
// production cluster has: processes killed mid-work, leader handovers, API server restarts and
// expired watches, rolling updates and broker restarts under load. Each case prints its figures
// and a summary line: fault | what was running | lost | recovery time.
package faults
