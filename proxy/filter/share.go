package filter

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareFetch (KIP-932) hands records to share-group consumers as Fetch does to others, by topic
// id, with the ranges of offsets the broker acquired for the consumer.

// DropShareRecords takes the records out of a ShareFetch partition that cannot be handed out
// as the broker sent them, with code as its error unless the broker gave one (0: none, as when
// the response's share is spent). The acquired ranges go too: a consumer handed ranges without
// records may acknowledge them as gaps, and the records would never be delivered. Without them
// the records stay acquired until the broker's acquisition lock ends, then are delivered again,
// which counts as one of their delivery attempts.
func DropShareRecords(p *kmsg.ShareFetchResponseTopicPartition, code int16) {
	p.Records, p.AcquiredRecords = nil, nil
	if code != 0 {
		p.ErrorCode = cmp.Or(p.ErrorCode, code)
	}
}

// capShareFetch lowers a ShareFetch's size limits as capFetch does a Fetch's.
func (c *Conn) capShareFetch(f *kmsg.ShareFetchRequest) {
	limit := c.fetchLimit()
	f.MaxBytes = min(f.MaxBytes, limit)
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			p := &f.Topics[i].Partitions[j]
			p.PartitionMaxBytes = min(p.PartitionMaxBytes, limit) // v0 only
		}
	}
}

// fitShareFetch is fitFetch for a ShareFetch response.
func fitShareFetch(resp kmsg.Response, limit int) bool {
	f, ok := resp.(*kmsg.ShareFetchResponse)
	if !ok {
		return false
	}
	size := len(f.AppendTo(nil))
	var parts []*kmsg.ShareFetchResponseTopicPartition
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			parts = append(parts, &f.Topics[i].Partitions[j])
		}
	}
	slices.SortFunc(parts, func(a, b *kmsg.ShareFetchResponseTopicPartition) int { return len(b.Records) - len(a.Records) })
	for _, p := range parts {
		if size+8 <= limit {
			break
		}
		size -= len(p.Records)
		DropShareRecords(p, kerr.MessageTooLarge.Code)
	}
	return true
}
