package binding

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"reflect"
	"strings"
	"testing"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

func cloneSecret(s *SecretData) *SecretData {
	if s == nil {
		return nil
	}
	d := make(map[string][]byte, len(s.Data))
	for k, v := range s.Data {
		d[k] = bytes.Clone(v)
	}
	return &SecretData{Name: s.Name, Data: d}
}

func with(s *SecretData, kv ...any) *SecretData {
	s = cloneSecret(s)
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		switch v := kv[i+1].(type) {
		case nil:
			delete(s.Data, k)
		case string:
			s.Data[k] = []byte(v)
		case []byte:
			s.Data[k] = v
		}
	}
	return s
}

func TestAssembleSecretFailures(t *testing.T) {
	p := loadPKI(t)
	k := parseKafkaYAML(t, kafkaV1)
	scramU, tlsU := parseUserYAML(t, scramUser), parseUserYAML(t, tlsUser)
	stale := parseUserYAML(t, scramUser)
	stale.Generation = 2
	notReady := parseUserYAML(t, tlsUser)
	notReady.Status.Conditions = []strimzi.Condition{{Type: "Ready", Status: "False", Reason: "InvalidResourceException", Message: "bad ACL"}}
	noAuth := parseUserYAML(t, scramUser)
	noAuth.Authentication = strimzi.UserAuthNone
	encryptedKey := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	badCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	choose := func(name string) Choice {
		c, f := ChooseListener(ListenerInput{Kafka: k, Requested: name})
		if f != nil && name != "scram" && name != "mtls" {
			t.Fatal(f)
		}
		if f != nil { // the SCRAM and mTLS listeners need a user to be chosen; build the choice by hand
			l, _ := k.Listener(name)
			st, _ := k.ListenerStatus(name)
			c = Choice{Listener: l, Status: st, BootstrapServers: st.BootstrapServers, SecurityProtocol: SecurityProtocol(l)}
		}
		return c
	}
	withStatusCert := choose("tls")
	withStatusCert.Status.Certificates = []string{"garbage"}

	tests := map[string]struct {
		in        SecretInput
		reason    string
		inMessage string
	}{
		"an unknown store format is refused": {
			in:     SecretInput{Choice: choose("plain"), StoreFormats: []string{"PEM", "pkcs12"}},
			reason: ReasonStoreFormatUnknown, inMessage: `"pkcs12"`,
		},
		"a user whose Ready condition is False is not ready, with Strimzi's message": {
			in:     SecretInput{Choice: choose("mtls"), User: notReady, UserSecret: p.tlsSecret(), CASecret: p.caSecret()},
			reason: ReasonUserNotReady, inMessage: "Ready is False: InvalidResourceException: bad ACL",
		},
		"a user whose status is behind its spec is not ready": {
			in:     SecretInput{Choice: choose("scram"), User: stale, UserSecret: p.scramSecret(), CASecret: p.caSecret()},
			reason: ReasonUserNotReady, inMessage: "generation 1 of 2",
		},
		"a user without authentication is refused": {
			in:     SecretInput{Choice: choose("scram"), User: noAuth, UserSecret: p.scramSecret(), CASecret: p.caSecret()},
			reason: ReasonUserAuthenticationUnsupported,
		},
		"a choice that does not fit the user is refused": {
			in:     SecretInput{Choice: choose("scram"), User: tlsU, UserSecret: p.tlsSecret(), CASecret: p.caSecret()},
			reason: ReasonListenerIncompatible,
		},
		"a choice without bootstrap servers is refused": {
			in:     SecretInput{Choice: Choice{Listener: lst("plain", intl, false, none)}},
			reason: ReasonBootstrapNotReady,
		},
		"a TLS listener without the CA Secret is refused": {
			in:     SecretInput{Choice: choose("tls")},
			reason: ReasonCACertificateMissing, inMessage: "does not exist",
		},
		"a CA Secret without ca.crt is refused even with other certificates": {
			in:     SecretInput{Choice: choose("tls"), CASecret: with(p.renewalCASecret(), "ca.crt", nil)},
			reason: ReasonCACertificateMissing, inMessage: "Secret my-cluster-cluster-ca-cert has no ca.crt",
		},
		"a ca.crt that is not PEM is refused naming the entry": {
			in:     SecretInput{Choice: choose("tls"), CASecret: with(p.caSecret(), "ca.crt", "MIIB...base64 without armour")},
			reason: ReasonCertificateNotPEM, inMessage: "entry ca.crt of Secret my-cluster-cluster-ca-cert does not hold a PEM certificate",
		},
		"an old CA entry that is not PEM is refused naming the entry": {
			in:     SecretInput{Choice: choose("tls"), CASecret: with(p.caSecret(), "ca-2024.crt", []byte{0xff, 0x00})},
			reason: ReasonCertificateNotPEM, inMessage: "entry ca-2024.crt of Secret",
		},
		"a PEM certificate that is not X.509 is refused": {
			in:     SecretInput{Choice: choose("tls"), CASecret: with(p.caSecret(), "ca.crt", badCert)},
			reason: ReasonCertificateInvalid, inMessage: "entry ca.crt",
		},
		"a listener status certificate that is not PEM is refused": {
			in:     SecretInput{Choice: withStatusCert, CASecret: p.caSecret()},
			reason: ReasonCertificateNotPEM, inMessage: "status.listeners[tls].certificates[0]",
		},
		"a SCRAM user without its Secret is refused": {
			in:     SecretInput{Choice: choose("scram"), User: scramU, CASecret: p.caSecret()},
			reason: ReasonUserSecretMissing, inMessage: "Secret my-user of KafkaUser kafka/my-user does not exist",
		},
		"a SCRAM user Secret without password is refused": {
			in:     SecretInput{Choice: choose("scram"), User: scramU, UserSecret: with(p.scramSecret(), "password", nil), CASecret: p.caSecret()},
			reason: ReasonUserCredentialsMissing, inMessage: "has no password",
		},
		"a TLS user without its Secret is refused": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, CASecret: p.caSecret()},
			reason: ReasonUserSecretMissing,
		},
		"a TLS user Secret without user.key is refused": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, UserSecret: with(p.tlsSecret(), "user.key", nil), CASecret: p.caSecret()},
			reason: ReasonUserCredentialsMissing, inMessage: "has no user.key",
		},
		"a TLS user Secret without user.crt is refused": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, UserSecret: with(p.tlsSecret(), "user.crt", nil), CASecret: p.caSecret()},
			reason: ReasonUserCredentialsMissing, inMessage: "has no user.crt",
		},
		"a user.crt that is not PEM is refused naming the entry": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, UserSecret: with(p.tlsSecret(), "user.crt", "hello"), CASecret: p.caSecret()},
			reason: ReasonCertificateNotPEM, inMessage: "entry user.crt of Secret my-mtls-user",
		},
		"a user.key that is not PEM is refused": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, UserSecret: with(p.tlsSecret(), "user.key", "hello"), CASecret: p.caSecret()},
			reason: ReasonPrivateKeyInvalid, inMessage: "entry user.key of Secret my-mtls-user does not hold a PEM private key",
		},
		"an encrypted user.key is refused": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, UserSecret: with(p.tlsSecret(), "user.key", encryptedKey), CASecret: p.caSecret()},
			reason: ReasonPrivateKeyInvalid, inMessage: "encrypted",
		},
		"a user.key that does not match user.crt is refused": {
			in:     SecretInput{Choice: choose("mtls"), User: tlsU, UserSecret: with(p.tlsSecret(), "user.key", p.otherKey), CASecret: p.caSecret()},
			reason: ReasonPrivateKeyInvalid, inMessage: "does not match the certificate in user.crt",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data, f := AssembleSecret(tc.in)
			if f == nil {
				t.Fatalf("AssembleSecret succeeded with %d entries, want %s", len(data), tc.reason)
			}
			if f.Reason != tc.reason || !strings.Contains(f.Message, tc.inMessage) {
				t.Fatalf("failure = %s: %s\nwant reason %s with message containing %q", f.Reason, f.Message, tc.reason, tc.inMessage)
			}
			if data != nil {
				t.Errorf("a failure returned data too")
			}
		})
	}
}

// TestAssembleSecretIsStable builds every golden input twice from deep copies and wants identical
// bytes, and checks the inputs were not modified.
func TestAssembleSecretIsStable(t *testing.T) {
	p := loadPKI(t)
	k := parseKafkaYAML(t, kafkaV1)
	inputs := map[string]Input{
		"SCRAM with Strimzi's stores": {Kafka: k, User: parseUserYAML(t, scramUser), UserSecret: p.scramSecret(), CASecret: p.caSecret(),
			StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
		"mTLS during a CA renewal with every format": {Kafka: k, User: parseUserYAML(t, tlsUser), UserSecret: p.tlsSecret(), CASecret: p.renewalCASecret(),
			StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}},
		"mTLS without any source store or password": {Kafka: k, User: parseUserYAML(t, tlsUser),
			UserSecret:   &SecretData{Name: "u", Data: map[string][]byte{"user.crt": p.userCert, "user.key": p.userKey}},
			CASecret:     &SecretData{Name: "c", Data: map[string][]byte{"ca.crt": p.clusterCA, "ca-old.crt": p.clusterCAOld}},
			StoreFormats: []string{FormatJKS, FormatPKCS12}},
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			before := []*SecretData{cloneSecret(in.CASecret), cloneSecret(in.UserSecret)}
			first, f := Build(in)
			if f != nil {
				t.Fatal(f)
			}
			second, f := Build(Input{Kafka: in.Kafka, User: in.User, UserSecret: cloneSecret(in.UserSecret),
				CASecret: cloneSecret(in.CASecret), StoreFormats: append([]string(nil), in.StoreFormats...)})
			if f != nil {
				t.Fatal(f)
			}
			if !maps.EqualFunc(first.Data, second.Data, bytes.Equal) {
				for k := range first.Data {
					if !bytes.Equal(first.Data[k], second.Data[k]) {
						t.Errorf("entry %s differs between two builds of the same input", k)
					}
				}
			}
			// The output must not share memory with the inputs, which are a lister's objects.
			for _, v := range first.Data {
				for i := range v {
					v[i] ^= 0xff
				}
			}
			if !reflect.DeepEqual(before, []*SecretData{in.CASecret, in.UserSecret}) {
				t.Errorf("Build modified its input Secrets, or returned their memory")
			}
		})
	}
}

func decodePEMCerts(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	certs, f := parseCertificates(b, "test")
	if f != nil {
		t.Fatal(f)
	}
	return certs
}

func jksTrusted(t *testing.T, b, password []byte) [][]byte {
	t.Helper()
	ks := keystore.New(keystore.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(b), password); err != nil {
		t.Fatalf("JKS does not load: %v", err)
	}
	var out [][]byte
	for _, a := range ks.Aliases() {
		e, err := ks.GetTrustedCertificateEntry(a)
		if err != nil {
			t.Fatalf("JKS alias %s: %v", a, err)
		}
		out = append(out, e.Certificate.Content)
	}
	return out
}

func TestCARenewalPutsBothCertificatesInEveryStore(t *testing.T) {
	p := loadPKI(t)
	newCA, oldCA := decodePEMCerts(t, p.clusterCA)[0], decodePEMCerts(t, p.clusterCAOld)[0]
	res, f := Build(Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, scramUser), UserSecret: p.scramSecret(),
		CASecret: p.renewalCASecret(), StoreFormats: []string{FormatPEM, FormatPKCS12, FormatJKS}})
	if f != nil {
		t.Fatal(f)
	}
	want := []*x509.Certificate{newCA, oldCA}
	if got := decodePEMCerts(t, res.Data[KeyTruststoreCRT]); !sameCertSet(got, want) || !got[0].Equal(newCA) {
		t.Errorf("ssl.truststore.crt holds %d certificates, want the new CA then the old one", len(got))
	}
	password := string(res.Data[KeyTruststorePassword])
	if password != string(p.clusterCAPassword) {
		t.Errorf("truststore password = %q, want Strimzi's ca.password", password)
	}
	p12Certs, err := pkcs12.DecodeTrustStore(res.Data[KeyTruststoreP12], password)
	if err != nil {
		t.Fatalf("ssl.truststore.p12 does not decode: %v", err)
	}
	if !sameCertSet(p12Certs, want) {
		t.Errorf("ssl.truststore.p12 holds %d certificates, want both CAs", len(p12Certs))
	}
	if bytes.Equal(res.Data[KeyTruststoreP12], p.clusterCAP12) {
		t.Errorf("Strimzi's ca.p12 (new CA only) was reused although it lacks the old CA")
	}
	jks := jksTrusted(t, res.Data[KeyTruststoreJKS], []byte(password))
	if len(jks) != 2 || !bytes.Equal(jks[0], newCA.Raw) || !bytes.Equal(jks[1], oldCA.Raw) {
		t.Errorf("ssl.truststore.jks holds %d certificates, want both CAs in order", len(jks))
	}
}

func TestTruststoreReuseAndDeduplication(t *testing.T) {
	p := loadPKI(t)
	tlsChoice, f := ChooseListener(ListenerInput{Kafka: parseKafkaYAML(t, kafkaV1), Requested: "tls"})
	if f != nil {
		t.Fatal(f)
	}
	bundle := append(append([]byte("# a comment Strimzi never writes\n"), p.clusterCA...), p.clusterCAOld...)
	tests := map[string]struct {
		ca        *SecretData
		statusPEM []string
		wantCerts int
		reused    bool
	}{
		"Strimzi's ca.p12 is reused byte for byte when it holds exactly ca.crt": {
			ca: p.caSecret(), wantCerts: 1, reused: true,
		},
		"an old CA entry equal to ca.crt adds nothing and ca.p12 is still reused": {
			ca: with(p.caSecret(), "ca-2025.crt", p.clusterCA), wantCerts: 1, reused: true,
		},
		"a ca.crt bundle and a duplicate entry give each certificate once": {
			ca: with(p.caSecret(), "ca.crt", bundle, "ca-old.crt", p.clusterCAOld), wantCerts: 2,
		},
		"status certificates of the listener are trusted too, de-duplicated": {
			ca: p.caSecret(), statusPEM: []string{string(p.clusterCA), string(p.clusterCAOld)}, wantCerts: 2,
		},
		"a ca.p12 that the password does not open is rebuilt": {
			ca: with(p.caSecret(), "ca.password", "wrong"), wantCerts: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := tlsChoice
			c.Status.Certificates = tc.statusPEM
			data, f := AssembleSecret(SecretInput{Choice: c, CASecret: tc.ca})
			if f != nil {
				t.Fatal(f)
			}
			if n := len(decodePEMCerts(t, data[KeyTruststoreCRT])); n != tc.wantCerts {
				t.Errorf("ssl.truststore.crt holds %d certificates, want %d", n, tc.wantCerts)
			}
			if reused := bytes.Equal(data[KeyTruststoreP12], tc.ca.Data["ca.p12"]); reused != tc.reused {
				t.Errorf("ca.p12 reused = %v, want %v", reused, tc.reused)
			}
			if string(data[KeyTruststorePassword]) != string(tc.ca.Data["ca.password"]) {
				t.Errorf("truststore password = %q, want the source's %q", data[KeyTruststorePassword], tc.ca.Data["ca.password"])
			}
			certs, err := pkcs12.DecodeTrustStore(data[KeyTruststoreP12], string(data[KeyTruststorePassword]))
			if err != nil || len(certs) != tc.wantCerts {
				t.Errorf("ssl.truststore.p12 decodes to %d certificates (%v), want %d", len(certs), err, tc.wantCerts)
			}
		})
	}
}

func TestKeystores(t *testing.T) {
	p := loadPKI(t)
	k := parseKafkaYAML(t, kafkaV1)
	u := parseUserYAML(t, tlsUser)
	userCert := decodePEMCerts(t, p.userCert)[0]
	key, f := parsePrivateKey(p.userKey, "test")
	if f != nil {
		t.Fatal(f)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))})
	all := []string{FormatPEM, FormatPKCS12, FormatJKS}

	tests := map[string]struct {
		secret       *SecretData
		reused       bool
		wantPassword string // empty: derived
	}{
		"Strimzi's user.p12 is not reused but the new store keeps user.password": {
			secret: p.tlsSecret(), wantPassword: string(p.userPassword),
		},
		"a user.p12 the password does not open is rebuilt with that password": {
			secret: with(p.tlsSecret(), "user.password", "another"), wantPassword: "another",
		},
		"a Secret without user.p12 and user.password gets a derived password": {
			secret: with(p.tlsSecret(), "user.p12", nil, "user.password", nil),
		},
		"a PKCS#1 key is accepted and written as PKCS#8": {
			secret: with(p.tlsSecret(), "user.key", pkcs1, "user.p12", nil), wantPassword: string(p.userPassword),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, f := Build(Input{Kafka: k, User: u, UserSecret: tc.secret, CASecret: p.caSecret(), StoreFormats: all})
			if f != nil {
				t.Fatal(f)
			}
			d := res.Data
			if !bytes.Equal(d[KeyKeystoreCRT], p.userCert) {
				t.Errorf("ssl.keystore.crt is not user.crt")
			}
			if !bytes.Equal(d[KeyKeystoreKey], pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})) {
				t.Errorf("ssl.keystore.key is not the PKCS#8 form of user.key")
			}
			password := string(d[KeyKeystorePassword])
			want := tc.wantPassword
			if want == "" {
				want = derivedKeystorePassword(keyDER)
				if len(want) != 32 {
					t.Errorf("derived password %q is not 32 hex digits", want)
				}
			}
			if password != want {
				t.Errorf("keystore password = %q, want %q", password, want)
			}
			if reused := bytes.Equal(d[KeyKeystoreP12], tc.secret.Data["user.p12"]); reused != tc.reused {
				t.Errorf("user.p12 reused = %v, want %v", reused, tc.reused)
			}
			gotKey, leaf, _, err := pkcs12.DecodeChain(d[KeyKeystoreP12], password)
			if err != nil {
				t.Fatalf("ssl.keystore.p12 does not decode: %v", err)
			}
			gotDER, _ := x509.MarshalPKCS8PrivateKey(gotKey)
			if !leaf.Equal(userCert) || !bytes.Equal(gotDER, keyDER) {
				t.Errorf("ssl.keystore.p12 does not hold user.crt and user.key")
			}
			ks := keystore.New()
			if err := ks.Load(bytes.NewReader(d[KeyKeystoreJKS]), []byte(password)); err != nil {
				t.Fatalf("ssl.keystore.jks does not load: %v", err)
			}
			e, err := ks.GetPrivateKeyEntry("user", []byte(password))
			if err != nil {
				t.Fatalf("ssl.keystore.jks has no key entry: %v", err)
			}
			if !bytes.Equal(e.PrivateKey, keyDER) || len(e.CertificateChain) != 1 || !bytes.Equal(e.CertificateChain[0].Content, userCert.Raw) {
				t.Errorf("ssl.keystore.jks does not hold user.crt and user.key")
			}
		})
	}
}

func TestStoreFormats(t *testing.T) {
	p := loadPKI(t)
	in := Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, tlsUser), UserSecret: p.tlsSecret(), CASecret: p.caSecret()}
	text := []string{KeyTruststoreCRT, KeyKeystoreCRT, KeyKeystoreKey}
	tests := map[string]struct {
		formats []string
		want    []string // store entries present besides the PEM ones, which are always there
	}{
		"no formats means the proposal's PEM and PKCS12": {
			want: []string{KeyTruststoreP12, KeyTruststorePassword, KeyKeystoreP12, KeyKeystorePassword},
		},
		"PEM only writes no binary entry and no password": {
			formats: []string{FormatPEM},
		},
		"JKS alone writes JKS stores and their passwords, PEM still present": {
			formats: []string{FormatJKS},
			want:    []string{KeyTruststoreJKS, KeyTruststorePassword, KeyKeystoreJKS, KeyKeystorePassword},
		},
		"repeated formats are harmless": {
			formats: []string{FormatPKCS12, FormatPKCS12, FormatPEM},
			want:    []string{KeyTruststoreP12, KeyTruststorePassword, KeyKeystoreP12, KeyKeystorePassword},
		},
	}
	stores := []string{KeyTruststoreP12, KeyTruststoreJKS, KeyTruststorePassword, KeyKeystoreP12, KeyKeystoreJKS, KeyKeystorePassword}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := in
			in.StoreFormats = tc.formats
			res, f := Build(in)
			if f != nil {
				t.Fatal(f)
			}
			for _, k := range text {
				if len(res.Data[k]) == 0 {
					t.Errorf("PEM entry %s missing", k)
				}
			}
			for _, k := range stores {
				_, got := res.Data[k]
				want := false
				for _, w := range tc.want {
					want = want || w == k
				}
				if got != want {
					t.Errorf("entry %s present = %v, want %v", k, got, want)
				}
			}
		})
	}
}

func TestSCRAMEntries(t *testing.T) {
	p := loadPKI(t)
	u := parseUserYAML(t, scramUser)
	u.Status.Username = ""
	res, f := Build(Input{Kafka: parseKafkaYAML(t, kafkaV1), User: u, CASecret: p.caSecret(), Provider: "kafkalink",
		UserSecret: with(p.scramSecret(), "password", `p"a\ss`)})
	if f != nil {
		t.Fatal(f)
	}
	want := map[string]string{
		KeyUsername:        "my-user",
		AliasUser:          "my-user",
		KeyPassword:        `p"a\ss`,
		KeySASLMechanism:   "SCRAM-SHA-512",
		AliasSASLMechanism: "SCRAM-SHA-512",
		KeySASLJAASConfig:  `org.apache.kafka.common.security.scram.ScramLoginModule required username="my-user" password="p\"a\\ss";`,
		KeyProvider:        "kafkalink",
		KeyType:            "kafka",
	}
	for k, v := range want {
		if got := string(res.Data[k]); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestTLSExternalNeedsNoUserSecret(t *testing.T) {
	p := loadPKI(t)
	res, f := Build(Input{Kafka: parseKafkaYAML(t, kafkaV1), User: parseUserYAML(t, tlsExternalUser), CASecret: p.caSecret()})
	if f != nil {
		t.Fatal(f)
	}
	for _, k := range []string{KeyKeystoreCRT, KeyKeystoreKey, KeyKeystoreP12, KeyKeystoreJKS, KeyKeystorePassword, KeyUsername, KeyPassword, AliasUser, KeySASLJAASConfig} {
		if _, ok := res.Data[k]; ok {
			t.Errorf("a tls-external binding has %s", k)
		}
	}
	if string(res.Data[KeySecurityProtocol]) != ProtocolSSL || len(res.Data[KeyTruststoreCRT]) == 0 {
		t.Errorf("a tls-external binding needs SSL and the truststore, got %q", res.Data[KeySecurityProtocol])
	}
}

func TestDetReaderIsDeterministicAndSeedDependent(t *testing.T) {
	read := func(r *detReader, n int) []byte {
		b := make([]byte, n)
		// Odd read sizes cross the 32-byte block boundary.
		for i := 0; i < n; i += 7 {
			end := min(i+7, n)
			if _, err := r.Read(b[i:end]); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	a := read(newDetReader("d", []byte("x")), 100)
	b := read(newDetReader("d", []byte("x")), 100)
	c := read(newDetReader("d", []byte("y")), 100)
	d := read(newDetReader("d", []byte("x"), nil), 100)
	if !bytes.Equal(a, b) {
		t.Errorf("same seed, different streams")
	}
	if bytes.Equal(a, c) || bytes.Equal(a, d) {
		t.Errorf("different seeds, same stream")
	}
}

func TestExpensiveSourceTruststoreIsNotDecoded(t *testing.T) {
	p := loadPKI(t)
	ca := decodePEMCerts(t, p.clusterCA)
	password := string(p.clusterCAPassword)
	tests := map[string]struct {
		enc   *pkcs12.Encoder
		cheap bool
	}{
		"OpenSSL 3 defaults (2,048 iterations) are cheap":     {enc: pkcs12.Modern2023, cheap: true},
		"legacy 3DES stores as Java 8 wrote them are cheap":   {enc: pkcs12.LegacyDES, cheap: true},
		"PBMAC1 stores (OpenSSL 3.4, Java 26) are cheap":      {enc: pkcs12.Modern2026, cheap: true},
		"a store with more than 100,000 iterations is not":    {enc: pkcs12.Modern2023.WithIterations(maxPBKDFIterations + 1)},
		"a store with 8 million iterations is refused unread": {enc: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var src []byte
			if tc.enc == nil {
				// Patch the iteration counts of a cheap store instead of paying for encoding one.
				src = bigIterations(t, ca, password)
			} else {
				var err error
				if src, err = tc.enc.EncodeTrustStore(ca, password); err != nil {
					t.Fatal(err)
				}
			}
			if got := cheapToDecode(src); got != tc.cheap {
				t.Fatalf("cheapToDecode = %v, want %v", got, tc.cheap)
			}
			out, f := truststoreP12(ca, password, src)
			if f != nil {
				t.Fatal(f)
			}
			if reused := bytes.Equal(out, src); reused != tc.cheap {
				t.Errorf("source reused = %v, want %v", reused, tc.cheap)
			}
		})
	}
}

// bigIterations encodes a truststore with 65,536 iterations and rewrites every such INTEGER
// (0x02 0x03 0x01 0x00 0x00) into 8,388,607, which keeps every length valid. Encoding one with
// that many iterations would take seconds; decoding it would too, which is the point.
func bigIterations(t *testing.T, certs []*x509.Certificate, password string) []byte {
	t.Helper()
	src, err := pkcs12.Modern2023.WithIterations(0x10000).EncodeTrustStore(certs, password)
	if err != nil {
		t.Fatal(err)
	}
	patched := bytes.ReplaceAll(src, []byte{0x02, 0x03, 0x01, 0x00, 0x00}, []byte{0x02, 0x03, 0x7f, 0xff, 0xff})
	if bytes.Equal(patched, src) {
		t.Fatal("no iteration count found to patch")
	}
	return patched
}

func TestStoreCacheChangesSpeedNotOutput(t *testing.T) {
	p := loadPKI(t)
	k := parseKafkaYAML(t, kafkaV1)
	all := []string{FormatPEM, FormatPKCS12, FormatJKS}
	cache := NewStoreCache(10)
	inputs := []Input{
		{Kafka: k, User: parseUserYAML(t, tlsUser), UserSecret: p.tlsSecret(), CASecret: p.renewalCASecret(), StoreFormats: all},
		{Kafka: k, User: parseUserYAML(t, scramUser), UserSecret: p.scramSecret(), CASecret: p.caSecret()},
		{Kafka: k, User: parseUserYAML(t, tlsUser), UserSecret: with(p.tlsSecret(), "user.password", nil), CASecret: p.caSecret(), StoreFormats: all},
		{Kafka: k, User: parseUserYAML(t, tlsUser), UserSecret: p.tlsSecret(), CASecret: p.caSecret(), StoreFormats: []string{FormatJKS}},
	}
	for round := 0; round < 2; round++ {
		for i, in := range inputs {
			want, f := Build(in)
			if f != nil {
				t.Fatal(f)
			}
			in.Cache = cache
			got, f := Build(in)
			if f != nil {
				t.Fatal(f)
			}
			if !maps.EqualFunc(got.Data, want.Data, bytes.Equal) {
				t.Errorf("round %d input %d: cached build differs from an uncached one", round, i)
			}
			// The caller owns what it gets: changing it must not reach the cache.
			for _, v := range got.Data {
				if len(v) > 0 {
					v[0] ^= 0xff
				}
			}
		}
	}
	// Round one misses everywhere; round two hits the truststore and keystore of every input
	// that builds them (four truststores, three keystores).
	if cache.hits != 7 {
		t.Errorf("cache hits = %d, want 7", cache.hits)
	}
	small := NewStoreCache(1)
	for _, in := range inputs {
		in.Cache = small
		if _, f := Build(in); f != nil {
			t.Fatal(f)
		}
	}
	if len(small.entries) > 1 {
		t.Errorf("a cache of one entry holds %d", len(small.entries))
	}
}
