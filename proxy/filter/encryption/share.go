package encryption

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// fetchedPart is one fetched partition's records, of a Fetch or a ShareFetch response, as
// decryptParts decrypts them in place.
type fetchedPart struct {
	topic     string
	label     string // the topic's metrics label (mayHoldEncrypted)
	partition int32
	records   *[]byte
	code      *int16
	// drop, when set, takes the records out (with code as the error, 0 for none) instead of
	// setting them nil: a ShareFetch partition's acquired ranges go with them.
	drop func(code int16)
}

// decryptParts decrypts fetched partitions. A partition it cannot decrypt now fails with a
// retriable error, one the KMS refuses to unwrap the DEK of with an error that is not retried;
// one whose batch alone is over the limits with MESSAGE_TOO_LARGE; one that finds the
// response's share spent by the partitions before it is sent without records, as a broker does
// when a response is full, and comes with a later fetch. Never is ciphertext handed out as if it
// were the record.
func (e *encryptor) decryptParts(ctx context.Context, x *filter.Exchange, l *lookups, jobs []fetchedPart) {
	var decoded atomic.Bool // some partition's records went out decrypted
	spent := make([]bool, len(jobs))
	eachParallel(len(jobs), worthParallel(jobs, func(j fetchedPart) int { return len(*j.records) }), func(i int) {
		j := jobs[i]
		dec, n, err := e.decryptPartition(ctx, j.topic, *j.records, x.Allowance, l)
		var code int16
		switch {
		case err == nil:
			if len(dec) > 0 {
				decoded.Store(true)
			}
			*j.records = dec
			e.m.decrypted(j.label, n)
			return
		case errors.Is(err, records.ErrShareSpent):
			spent[i] = true
		case errors.Is(err, records.ErrTooLarge):
			code = errMessageTooLarge
		case errors.Is(err, ErrKMSRefused):
			code = errKMSRefused
			e.guard.logOnce(ctx, &e.guard.lastFetchLog, err, "RecordEncryption: the KMS refuses to unwrap the DEK of fetched records; their partition fails with POLICY_VIOLATION, not retried by consumers, until it does (Vault: is the key's min_decryption_version above the records' key version?)",
				"topic", j.topic, "partition", j.partition)
		default:
			code = errKafkaStorageErr
		}
		j.dropWith(code)
	})
	// Partitions worked on in parallel spend one share: those that found it spent come with a
	// later fetch, unless none got through, when the records are too large for any share.
	for i, s := range spent {
		if s && !decoded.Load() {
			*jobs[i].code = errMessageTooLarge
		}
	}
}

func (j fetchedPart) dropWith(code int16) {
	if j.drop != nil {
		j.drop(code)
		return
	}
	*j.records = nil
	if code != 0 {
		*j.code = code
	}
}

// decryptShareFetch decrypts a ShareFetch response's records as decryptFetch does a Fetch's,
// with the names the chain resolved its topic ids to. A partition whose records cannot be
// handed out loses its acquired ranges too (filter.DropShareRecords): its records are delivered
// again once the broker's acquisition lock ends.
func (e *encryptor) decryptShareFetch(ctx context.Context, x *filter.Exchange, resp *kmsg.ShareFetchResponse) {
	var jobs []fetchedPart
	l := e.lookupsFor(x)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		topic, ok := x.TopicName(t.TopicID)
		if !ok { // the chain resolves every id or drops its records; without a name none decrypt
			for j := range t.Partitions {
				filter.DropShareRecords(&t.Partitions[j], kerr.UnknownTopicID.Code)
			}
			continue
		}
		may, label := e.mayHoldEncrypted(ctx, topic, l)
		if !may {
			continue
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			jobs = append(jobs, fetchedPart{topic: topic, label: label, partition: p.Partition, records: &p.Records, code: &p.ErrorCode,
				drop: func(code int16) { filter.DropShareRecords(p, code) }})
		}
	}
	e.decryptParts(ctx, x, l, jobs)
}
