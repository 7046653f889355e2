package binding

import (
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

func TestStoreCacheParsesACABundleOnce(t *testing.T) {
	a := bindingtest.NewCA(t, "ca a", time.Now().Add(-time.Hour))
	b := bindingtest.NewCA(t, "ca b", time.Now().Add(-time.Hour))
	c := NewStoreCache(10)
	where := func() string { return "here" }
	first, f := c.certificates(a.CertPEM, where)
	if f != nil || len(first) != 1 {
		t.Fatalf("certificates = %v, %v", first, f)
	}
	again, _ := c.certificates(append([]byte(nil), a.CertPEM...), func() string {
		t.Error("where asked for on a cached bundle")
		return ""
	})
	if len(again) != 1 || again[0] != first[0] {
		t.Error("the same bundle was parsed again")
	}
	if other, _ := c.certificates(b.CertPEM, where); len(other) != 1 || other[0] == first[0] || other[0].Subject.CommonName != "ca b" {
		t.Errorf("another bundle gave %v", other)
	}
	for range 2 { // a failure is reported each time, never remembered
		if _, f := c.certificates([]byte("not PEM"), where); f == nil || f.Reason != ReasonCertificateNotPEM {
			t.Errorf("not PEM: %v", f)
		}
	}
	var none *StoreCache
	if certs, f := none.certificates(a.CertPEM, where); f != nil || len(certs) != 1 {
		t.Errorf("nil cache: %v, %v", certs, f)
	}
}

func TestStoreCacheParsedBundlesAreBounded(t *testing.T) {
	c := NewStoreCache(10)
	for i := range maxParsed + 1 {
		ca := bindingtest.NewCA(t, "ca", time.Now().Add(-time.Duration(i+1)*time.Minute))
		if _, f := c.certificates(ca.CertPEM, func() string { return "" }); f != nil {
			t.Fatal(f)
		}
	}
	if len(c.parsed) > maxParsed {
		t.Errorf("%d parsed bundles kept, at most %d", len(c.parsed), maxParsed)
	}
}
