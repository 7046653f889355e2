package binding_test

import (
	"testing"
)

// TestStrimziInstalledAfterTheOperator starts the operator on a cluster without Strimzi's CRDs:
// connections report StrimziNotInstalled, and once the CRDs are installed they bind without an
// operator restart.
func TestStrimziInstalledAfterTheOperator(t *testing.T) {
	h := newHarness(t, "none", realOperator)
	h.startOperator("operator")
	ns := h.namespace("early")
	h.createConnection(connection(ns, "app", "my-cluster", "", "", ""))
	h.waitReason(ns, "app", "StrimziNotInstalled")
	h.waitEvent(ns, "app", "Warning", "StrimziNotInstalled")

	if err := h.cp.InstallCRDFiles(h.ctx, strimziCRDs(t, "1.2.0")...); err != nil {
		t.Fatal(err)
	}
	h.waitReason(ns, "app", "KafkaNotFound")
	h.setKafka(ns, "my-cluster", []listener{plain}, nil)
	h.waitReason(ns, "app", "Bound")
}
