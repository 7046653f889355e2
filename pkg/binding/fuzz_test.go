package binding

import (
	"testing"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// FuzzAssembleSecret feeds arbitrary Secret contents (what a user or a broken operator can put in
// the CA and user Secrets) to the assembly: it may refuse them with a Failure but must never
// panic, and whatever it accepts must come out the same twice.
func FuzzAssembleSecret(f *testing.F) {
	p := loadPKI(f)
	f.Add(p.clusterCA, p.clusterCAP12, p.clusterCAPassword, p.userCert, p.userKey, p.userP12, p.userPassword, uint8(0))
	f.Add(append(p.clusterCA, p.clusterCAOld...), []byte{}, []byte{}, p.userCert, p.otherKey, []byte{0x30, 0x82}, []byte{}, uint8(1))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []byte{0x30}, []byte("pw"),
		[]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"), []byte{}, []byte{}, []byte{}, uint8(2))
	k := kafkaWith(lst("mtls", intl, true, tlsA), lst("scram", intl, true, scram))
	k.Status.Listeners[0].Certificates = []string{string(p.clusterCAOld)}
	f.Fuzz(func(t *testing.T, caCrt, caP12, caPassword, userCrt, userKey, userP12, userPassword []byte, mode uint8) {
		u := user(strimzi.UserAuthTLS)
		if mode%2 == 1 {
			u = user(strimzi.UserAuthSCRAMSHA512)
		}
		in := Input{
			Kafka: k, User: u,
			CASecret: &SecretData{Name: "ca", Data: map[string][]byte{
				"ca.crt": caCrt, "ca.p12": caP12, "ca.password": caPassword, "ca-old.crt": userCrt,
			}},
			UserSecret: &SecretData{Name: "user", Data: map[string][]byte{
				"user.crt": userCrt, "user.key": userKey, "user.p12": userP12, "user.password": userPassword, "password": userPassword,
			}},
			StoreFormats: []string{FormatPEM},
		}
		// Building stores costs milliseconds of PBKDF per run; do it in a quarter of the runs so
		// the fuzzer spends its time in the parsers of untrusted bytes.
		if mode&6 == 6 {
			in.StoreFormats = []string{FormatPEM, FormatPKCS12, FormatJKS}
		}
		first, fail1 := Build(in)
		second, fail2 := Build(in)
		if (fail1 == nil) != (fail2 == nil) {
			t.Fatalf("two builds disagree: %v vs %v", fail1, fail2)
		}
		if fail1 != nil {
			if fail1.Reason == "" || fail1.Message == "" {
				t.Fatalf("failure without reason or message: %+v", fail1)
			}
			return
		}
		for key, v := range first.Data {
			if string(second.Data[key]) != string(v) {
				t.Fatalf("entry %s differs between two builds", key)
			}
		}
	})
}

// FuzzSourceTruststore feeds arbitrary bytes as Strimzi's ca.p12: the cost check must never panic,
// and whatever it lets through must decode (or fail) without panicking.
func FuzzSourceTruststore(f *testing.F) {
	p := loadPKI(f)
	f.Add(p.clusterCAP12, string(p.clusterCAPassword))
	f.Add(p.userP12, string(p.userPassword))
	f.Add([]byte{0x30, 0x84, 0xff, 0xff, 0xff, 0xff}, "")
	f.Fuzz(func(t *testing.T, p12 []byte, password string) {
		if cheapToDecode(p12) {
			_, _ = pkcs12.DecodeTrustStore(p12, password)
		}
	})
}
