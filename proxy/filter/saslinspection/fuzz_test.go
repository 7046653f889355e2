package saslinspection_test

import (
	"testing"
)

// FuzzSaslInspection: any client messages and broker replies, for each mechanism, neither panic
// nor set a subject the broker did not accept: a user is only ever set after a successful
// response ending the exchange, and then it is the one the client's first message named.
func FuzzSaslInspection(f *testing.F) {
	f.Add(uint8(0), []byte("\x00bob\x00pw"), []byte(""), []byte(""), int16(0))
	f.Add(uint8(1), []byte(scramFirst), []byte("r=abcdef,s=c2FsdA==,i=4096"), []byte("c=biws,r=abcdef,p=AAAA"), int16(0))
	f.Add(uint8(2), []byte("n,,\x01auth=Bearer "+jwt("svc")+"\x01\x01"), []byte(`{"status":"invalid_token"}`), []byte("\x01"), int16(58))
	f.Add(uint8(3), []byte("n,,n=alice,r="), []byte("e=other-error"), []byte("c=biws,r=x,p=AA=="), int16(0))
	mechs := []string{"PLAIN", "SCRAM-SHA-256", "OAUTHBEARER", "SCRAM-SHA-512"}
	f.Fuzz(func(t *testing.T, mech uint8, first, reply, second []byte, code int16) {
		c := newClient(t, `{"enabledMechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"], "requireAuthentication": true}`)
		if _, err := c.exchange(handshake(mechs[int(mech)%len(mechs)])); err != nil {
			t.Fatal(err)
		}
		msgs := [][]byte{first, second}
		replies := []struct {
			code  int16
			reply string
		}{{0, string(reply)}, {code, ""}}
		for i, m := range msgs {
			before := c.conn.Subject()
			if _, err := c.exchange(authenticate(1, string(m), replies[i].code, replies[i].reply, 1000)); err != nil {
				return // closed
			}
			if after := c.conn.Subject(); after.User != before.User && (replies[i].code != 0 || after.User == "") {
				t.Fatalf("subject %+v after a reply with code %d", after, replies[i].code)
			}
		}
	})
}
