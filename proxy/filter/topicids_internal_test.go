package filter

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicIDMapIsBounded: the map holds at most its bound, dropping the id used least recently:
// an id clients keep producing to stays while ids named once pass through.
func TestTopicIDMapIsBounded(t *testing.T) {
	ids := newTopicIDs(3)
	busy := [16]byte{1}
	ids.put(busy, "busy")
	for i := range 100 {
		ids.put([16]byte{2, byte(i)}, fmt.Sprintf("once-%d", i))
		if _, ok := ids.name(busy); !ok {
			t.Fatalf("the id in use was dropped after %d others were learned", i+1)
		}
	}
	if n := ids.len(); n != 3 {
		t.Errorf("%d ids held, want the bound, 3", n)
	}
	if _, ok := ids.name([16]byte{2, 0}); ok {
		t.Error("the least recently used id was kept")
	}
	if name, ok := ids.name([16]byte{2, 99}); !ok || name != "once-99" {
		t.Errorf("the last id learned: %q %v", name, ok)
	}
	ids.put(busy, "renamed")
	if name, _ := ids.name(busy); name != "renamed" || ids.len() != 3 {
		t.Errorf("an id learned again: %q, %d ids held", name, ids.len())
	}
}

// TestChainLearnsUpToItsBound: a Metadata response naming more topics than maxTopicIDs (a
// client listing every topic of a large cluster) leaves the chain holding the last maxTopicIDs.
func TestChainLearnsUpToItsBound(t *testing.T) {
	c, err := newChain(t.Context(), "", nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	id := func(i int) [16]byte { return [16]byte{1, byte(i >> 16), byte(i >> 8), byte(i)} }
	for i := range maxTopicIDs + 1 {
		mt := kmsg.NewMetadataResponseTopic()
		name := fmt.Sprintf("t-%d", i)
		mt.Topic, mt.TopicID = &name, id(i)
		resp.Topics = append(resp.Topics, mt)
	}
	frame := append([]byte{0, 0, 0, 0, 0, 0, 0, 7, 0}, resp.AppendTo(nil)...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	c.ForConnection().learn(kmsg.Metadata.Int16(), 12, frame)
	if n := c.ids.len(); n != maxTopicIDs {
		t.Errorf("%d ids held, want %d", n, maxTopicIDs)
	}
	if _, ok := c.ids.name(id(0)); ok {
		t.Error("the first of one id too many was kept")
	}
	if name, ok := c.ids.name(id(maxTopicIDs)); !ok || name != fmt.Sprintf("t-%d", maxTopicIDs) {
		t.Errorf("the last id: %q %v", name, ok)
	}
}

// TestLearnsOnlyVersionsKmsgReads: Metadata below v10 carries no ids, and above kmsg's version it
// would be read in another layout; DescribeTopicPartitions carries them from v0.
func TestLearnsOnlyVersionsKmsgReads(t *testing.T) {
	for name, tc := range map[string]struct {
		key, version int16
		want         bool
	}{
		"Metadata v9 carries no topic ids":             {kmsg.Metadata.Int16(), 9, false},
		"Metadata v10 carries topic ids":               {kmsg.Metadata.Int16(), 10, true},
		"Metadata at kmsg's last version":              {kmsg.Metadata.Int16(), kmsg.NewPtrMetadataResponse().MaxVersion(), true},
		"Metadata above kmsg's versions is not read":   {kmsg.Metadata.Int16(), kmsg.NewPtrMetadataResponse().MaxVersion() + 1, false},
		"DescribeTopicPartitions v0 carries topic ids": {kmsg.DescribeTopicPartitions.Int16(), 0, true},
		"DescribeTopicPartitions above kmsg's":         {kmsg.DescribeTopicPartitions.Int16(), 1, false},
		"Produce responses pair no id with a name":     {kmsg.Produce.Int16(), 13, false},
	} {
		if got := learnsFrom(tc.key, tc.version); got != tc.want {
			t.Errorf("%s: learnsFrom = %v", name, got)
		}
	}
}
