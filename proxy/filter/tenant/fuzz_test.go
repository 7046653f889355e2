package tenant

import (
	"context"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// requestFrame frames a request body of key and version with a client id, as a client would.
func requestFrame(key, version int16, body []byte) []byte {
	b := make([]byte, 14, 14+1+len(body))
	binary.BigEndian.PutUint16(b[4:], uint16(key))
	binary.BigEndian.PutUint16(b[6:], uint16(version))
	binary.BigEndian.PutUint32(b[8:], 1)
	binary.BigEndian.PutUint16(b[12:], 0xffff) // null client id
	if req := kmsg.RequestForKey(key); req != nil {
		req.SetVersion(version)
		if req.IsFlexible() {
			b = append(b, 0)
		}
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// FuzzTenantChains: any request of any key, and any response to it, through a MultiTenant and an
// EntityIsolation chain: an error or a frame, never a panic. Seeds are every key's request and
// response with every name field set, at the audited version.
func FuzzTenantChains(f *testing.F) {
	for k := range rules {
		v := testVersion(k)
		req := kmsg.RequestForKey(k)
		req.SetVersion(v)
		fill(reflect.ValueOf(req), "x")
		resp := req.ResponseKind()
		resp.SetVersion(v)
		fill(reflect.ValueOf(resp), "t-x")
		f.Add(k, v, req.AppendTo(nil), resp.AppendTo(nil), true)
	}
	f.Add(int16(3), int16(12), []byte{0xff, 0xff, 0xff, 0xff}, []byte{0x7f, 0xff, 0xff, 0xff}, false)
	f.Add(int16(700), int16(0), []byte{}, []byte{}, true)
	mt, err := filter.NewChain(context.Background(), "t", []config.Filter{{Name: "t", Type: MultiTenantType, Config: []byte(`{}`)}})
	if err != nil {
		f.Fatal(err)
	}
	ei, err := filter.NewChain(context.Background(), "t", []config.Filter{{Name: "e", Type: EntityIsolationType, Config: []byte(`{"entityTypes":["GROUP_ID","TRANSACTIONAL_ID"],"mapper":"PrincipalEntityNameMapperService"}`)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, version int16, body, respBody []byte, multiTenant bool) {
		if len(body) > 1<<16 || len(respBody) > 1<<16 {
			return
		}
		c := ei
		if multiTenant {
			c = mt
		}
		conn := c.ForConnection()
		conn.SetSubject(filter.Subject{User: "alice", Mechanism: "PLAIN"})
		if !c.Wants(key) {
			return
		}
		_, _, state, err := conn.Request(requestFrame(key, version, body))
		if err != nil || state == nil {
			return
		}
		rf := make([]byte, 8, 9+len(respBody))
		binary.BigEndian.PutUint32(rf[4:], 1)
		if resp := kmsg.ResponseForKey(key); resp != nil {
			resp.SetVersion(version)
			if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
				rf = append(rf, 0)
			}
		}
		rf = append(rf, respBody...)
		binary.BigEndian.PutUint32(rf, uint32(len(rf)-4))
		_, _ = conn.Response(key, version, rf, state)
	})
}
