package kafka

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// corruptTagCount is a DescribeCluster v2 response (after the size) whose broker tagged-field
// count, 0x80 0x00 0x00 0x80 0xff..., announces billions of fields: kmsg alone would loop for
// some 25 s before calling it invalid. Found by FuzzCopyResponses.
var corruptTagCount = []byte("\x00\x00\x00\a\x00\x00\x00\x00\x00\x00\x00\x00\x01\bcluster\xff\xff\xff\xff\x03\x00\x00\x00\x00\t10.0.0.1\x00\x00#\x84\x00\x00\x80\xff\xff\xff\x02\t10.0.0.3\x00\x00#\x86\x03r1\x00\x00\x80\x00\x00\x00\x00")

func TestDecodeBoundedGivesUpOnACorruptTagCount(t *testing.T) {
	defer func(b time.Duration) { decodeBase = b }(decodeBase)
	decodeBase = 50 * time.Millisecond
	_, _, err := RewriteResponse(nil, kmsg.DescribeCluster.Int16(), 2, corruptTagCount, testMap)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "took over") {
		t.Fatalf("got %v, want the bounded decode to give up", err)
	}
}

func TestMayHoldLongUvarint(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want bool
	}{
		{nil, false},
		{[]byte{0x7f, 0x80, 0x81, 0x01, 0xff, 0xff, 0x00}, false}, // runs of 2 at most: uvarints of 3 bytes
		{[]byte{0x00, 0x80, 0x80, 0x80, 0x01}, true},              // a 4-byte uvarint
		{corruptTagCount, true},
	} {
		if got := mayHoldLongUvarint(tc.in); got != tc.want {
			t.Errorf("mayHoldLongUvarint(% x) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
