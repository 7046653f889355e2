package binding_test

import (
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
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

	files, source, err := framework.StrimziCRDFiles("1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Strimzi CRDs: %s", source)
	if err := h.cp.InstallCRDFiles(h.ctx, files...); err != nil {
		t.Fatal(err)
	}
	h.waitReason(ns, "app", "KafkaNotFound")
	h.setKafka(ns, "my-cluster", []listener{plain}, nil)
	h.waitReason(ns, "app", "Bound")
}
