package authorization

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzEnforce: any request body of any key and version, from a subject the rules partly allow,
// is forwarded, answered or refused without a panic, and its response (the empty one of its
// kind) merges without one.
func FuzzEnforce(f *testing.F) {
	for _, seed := range []kmsg.Request{produceOf("orders-1", "payments"), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrOffsetFetchRequest(),
		kmsg.NewPtrDescribeGroupsRequest(), kmsg.NewPtrDeleteTopicsRequest(), kmsg.NewPtrFetchRequest()} {
		seed.SetVersion(seed.MaxVersion())
		f.Add(seed.Key(), seed.GetVersion(), seed.AppendTo(nil))
	}
	f.Add(int16(3), int16(12), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(int16(0), int16(9), []byte{0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f})
	conn := connFor(f, ordersRules, "CN=alice")
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		req := kmsg.RequestForKey(key)
		if req == nil || version < 0 || version > req.MaxVersion() {
			return
		}
		req.SetVersion(version)
		frame := make([]byte, 14, 15+len(body))
		binary.BigEndian.PutUint16(frame[4:], uint16(key))
		binary.BigEndian.PutUint16(frame[6:], uint16(version))
		binary.BigEndian.PutUint16(frame[12:], 0xffff) // no client id
		if req.IsFlexible() {
			frame = append(frame, 0)
		}
		frame = append(frame, body...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		_, _, state, err := conn.Request(frame)
		if err != nil || state == nil {
			return
		}
		resp := req.ResponseKind()
		_, _ = conn.Response(key, version, responseFrame(resp, version), state)
	})
}
