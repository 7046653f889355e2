// Package encryption is the RecordEncryption filter: envelope encryption of record values on
// their way to the brokers, and decryption on their way back.
//
// Configuration, in Kroxylicious' shape:
//
//	kms: KubernetesSecretKms            # or VaultKmsService, with Kroxylicious' kmsConfig
//	kmsConfig: {keyDir: /opt/kroxylicious/secrets/filter/keks}   # $(secretDir:keks)
//	selector: TemplateKekSelector
//	selectorConfig: {template: "KEK_$(topicName)"}
//	unresolvedKeyPolicy: PASSTHROUGH_UNENCRYPTED   # or REJECT: topics without a KEK
//	experimental: {maxEncryptionsPerDek: 1048576}  # DEK lifetime and caches (tuning.go)
//
// Each produced record value is encrypted with AES-256-GCM under a data key (DEK) that the KMS
// wraps with the topic's key-encryption key (KEK). A DEK serves a bounded number of records for a
// bounded time (by default maxRecordsPerDEK and maxDEKAge), then a new one is made: there is
// never one KMS call per record. The wrapped DEK
// travels in the record; the format is in docs/record-encryption.md. Keys and headers are not
// encrypted. A record that was never encrypted passes through on fetch.
//
// Files:
//   - encryption.go: the filter: Produce requests encrypted per partition (OnRequest), Fetch
//     responses decrypted (OnResponse, decryptFetch); a record is sealed by sealer.rewrite, with
//     the DEK from encryptor.dek, and opened by decryptRecord.
//   - direct.go: the direct record codec: uncompressed batches sealed and opened by walking
//     their records in place (viewBatch, directSealer, decryptDirect), byte for byte what the
//     decoding path (encryptDecoded, decryptDecoded) writes, which takes every other batch.
//   - share.go: fetched partitions decrypted (decryptParts), for Fetch and ShareFetch responses
//     (decryptShareFetch, with the topic names the chain resolved the ids to).
//   - kms.go: the KMS interface, SecretKMS (KEKs in a mounted Secret), AES-GCM seal and open.
//   - vault.go: VaultKMS, Vault's transit engine over HTTP(S).
//   - kroxylicious.go: Kroxylicious' record format, read always (decryptRecord dispatches by
//     header) and written with experimental.recordFormat KROXYLICIOUS_V2 (rewriter).
//   - guard.go: what clients can make the filter look up: legal topic and KEK names, look-ups per
//     request and per connection, the KMS rate limiter, the bounded caches (lru).
//   - tuning.go: the experimental settings of DEK lifetime and caches, under Kroxylicious' names.
//   - metrics.go: the filter's Prometheus metrics, by virtual cluster (docs/monitoring.md).
package encryption

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

func init() {
	filter.RegisterTyped(build, "RecordEncryption", "io.kroxylicious.filter.encryption.RecordEncryption")
}

// Config is the filter's configuration.
type Config struct {
	KMS            string          `json:"kms"`
	KMSConfig      json.RawMessage `json:"kmsConfig,omitempty"`
	Selector       string          `json:"selector"`
	SelectorConfig struct {
		Template string `json:"template"`
	} `json:"selectorConfig"`
	UnresolvedKeyPolicy string `json:"unresolvedKeyPolicy,omitempty"`
	// Experimental holds Kroxylicious' experimental settings: those of DEK lifetime and caches are
	// read by parseTuning, kafkalink's recordFormat by writesKroxylicious, others ignored.
	Experimental json.RawMessage `json:"experimental,omitempty"`
}

// The defaults of the limits of one DEK's use, of how long a KEK's existence is remembered, and
// of the sizes of the caches (clients choose topic names, so the KEK cache is bounded too); the
// configuration's experimental settings change them (tuning.go).
const (
	maxRecordsPerDEK = 1 << 20
	maxDEKAge        = time.Hour
	kekCacheTTL      = 30 * time.Second
	maxKEKCache      = 4096
	maxDecryptCache  = 4096
	topicPlaceholder = "$(topicName)"
	// HeaderKey marks an encrypted record; its value is the format version.
	HeaderKey = "kafkalink.io/encryption"
	// FormatVersion is the only encrypted value format so far (docs/record-encryption.md).
	FormatVersion byte = 1
)

// Kafka error codes the filter answers with.
var (
	errCorruptMessage  = kerr.CorruptMessage.Code              // records that are not whole record batches
	errMessageTooLarge = kerr.MessageTooLarge.Code             // records over the filters' memory limits
	errRequestTimedOut = kerr.RequestTimedOut.Code             // retriable: the KMS or the proxy's memory is busy
	errInvalidTopic    = kerr.InvalidTopicException.Code       // a name that is no legal topic name
	errUnsupportedFmt  = kerr.UnsupportedForMessageFormat.Code // message format v0/v1 batches: not encrypted, not written
	errPolicyViolation = kerr.PolicyViolation.Code             // a topic without a KEK under REJECT
	errKafkaStorageErr = kerr.KafkaStorageError.Code           // retriable, on fetch: a DEK cannot be unwrapped now
	errInvalidRecord   = kerr.InvalidRecord.Code               // a control batch from a client
	// errKMSRefused is what a partition gets when the KMS will never do what it needs: not
	// retried (POLICY_VIOLATION is no retriable error for franz-go or the Java client), so
	// consumers and producers stop and say so instead of waiting for ever.
	errKMSRefused = kerr.PolicyViolation.Code
)

const (
	policyPassthrough = "PASSTHROUGH_UNENCRYPTED"
	policyReject      = "REJECT"
)

type encryptor struct {
	kms      KMS
	template string
	reject   bool
	tune     tuning
	m        *metrics
	// kroxylicious: values are written in Kroxylicious' format (both formats are always read).
	kroxylicious bool

	guard    *kmsGuard
	mu       sync.Mutex
	deks     map[string]*dekState // by KEK id; only KEKs that exist
	kekSeen  *lru[bool]           // by KEK id: whether it exists, for tune.kekFoundTTL or kekNotFoundTTL
	opened   *lru[cipher.AEAD]    // by KEK id and wrapped DEK
	unopened *lru[error]          // by KEK id and wrapped DEK: the KMS's answer that it will not unwrap it
}

type dekState struct {
	aead    cipher.AEAD
	edek    []byte
	uses    int64
	created time.Time
	// nonceBase is drawn at random once per DEK; the nth record sealed under it has the nonce
	// nonceBase with n XORed into its last 8 bytes (nonce). Counters are handed out by dek,
	// never twice, so no nonce repeats under a DEK, and no record pays for a random draw.
	nonceBase [nonceLen]byte
}

// nonce is the nonce of the DEK's counter-th sealed value.
func (d *dekState) nonce(counter uint64) [nonceLen]byte {
	n := d.nonceBase
	binary.BigEndian.PutUint64(n[4:], binary.BigEndian.Uint64(n[4:])^counter)
	return n
}

// build makes the filter from its configuration, reading the Vault token and trust store with
// env.ReadFile; it opens no connection.
func build(cfg *Config, env filter.Env) (filter.Filter, error) {
	tune, err := parseTuning(cfg.Experimental)
	if err != nil {
		return nil, err
	}
	e := &encryptor{tune: tune}
	switch cfg.KMS {
	case KMSSecret:
		var kc struct {
			KeyDir string `json:"keyDir"`
		}
		if err := filter.DecodeStrict(cfg.KMSConfig, &kc); err != nil || kc.KeyDir == "" {
			return nil, fmt.Errorf("kmsConfig: %s needs keyDir, the folder of a mounted Secret ($(secretDir:…))", KMSSecret)
		}
		e.kms = SecretKMS{Dir: kc.KeyDir}
	case KMSVault:
		v, err := newVaultKMS(cfg.KMSConfig, env.ReadFile)
		if err != nil {
			return nil, err
		}
		e.kms = v
	default:
		return nil, fmt.Errorf("kms: %q is not a KMS kafkalink-proxy knows (%s, %s)", cfg.KMS, KMSVault, KMSSecret)
	}
	if cfg.Selector != "TemplateKekSelector" {
		return nil, fmt.Errorf("selector: %q is not supported: only TemplateKekSelector", cfg.Selector)
	}
	if !strings.Contains(cfg.SelectorConfig.Template, topicPlaceholder) {
		return nil, fmt.Errorf("selectorConfig.template: %q has no %s", cfg.SelectorConfig.Template, topicPlaceholder)
	}
	e.template = cfg.SelectorConfig.Template
	switch cfg.UnresolvedKeyPolicy {
	case "", policyPassthrough:
	case policyReject:
		e.reject = true
	default:
		return nil, fmt.Errorf("unresolvedKeyPolicy: %q is not %s or %s", cfg.UnresolvedKeyPolicy, policyPassthrough, policyReject)
	}
	if e.kroxylicious, err = writesKroxylicious(cfg.Experimental, cfg.KMS); err != nil {
		return nil, err
	}
	e.start(env.VirtualCluster)
	return e, nil
}

// start makes the caches and the virtual cluster's metrics of a filter whose configuration was
// read: Close deletes those metrics, so a build that fails does not start them.
func (e *encryptor) start(vc string) {
	e.m = newMetrics(vc)
	e.guard = newKMSGuard(e.m)
	e.deks = map[string]*dekState{}
	e.kekSeen = newLRU[bool](e.tune.kekCacheSize, e.tune.kekFoundTTL)
	e.opened = newLRU[cipher.AEAD](e.tune.dekCacheSize, e.tune.dekIdleTTL)
	e.opened.idle = true
	e.unopened = newLRU[error](e.tune.dekCacheSize, e.tune.kekNotFoundTTL)
}

// Close implements filter.Closer: the KMS client's idle connections are closed, and the virtual
// cluster's series deleted unless another of its filters is live.
func (e *encryptor) Close() error {
	e.m.close()
	if c, ok := e.kms.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// Keys implements filter.Filter: Produce requests, Fetch and ShareFetch responses.
func (e *encryptor) Keys() []int16 {
	return []int16{kmsg.Produce.Int16(), kmsg.Fetch.Int16(), kmsg.ShareFetch.Int16()}
}

// OnRequest encrypts the record values of a Produce request. A partition whose topic's KEK
// cannot be resolved now (KMS unavailable) is refused with a retriable error and never written
// in the clear; a topic without a KEK passes unencrypted or is refused, as configured.
func (e *encryptor) OnRequest(ctx context.Context, x *filter.Exchange) error {
	req, ok := x.Request.(*kmsg.ProduceRequest)
	if !ok {
		return nil
	}
	jobs := e.produceJobs(ctx, req, e.lookupsFor(x))
	eachParallel(len(jobs), worthParallel(jobs, func(j produceJob) int { return len(j.p.Records) }), func(i int) {
		if j := &jobs[i]; j.exists && j.code == 0 {
			e.encryptJob(ctx, j, x)
		}
	})
	bad := filter.Refusals{}
	refused := map[*kmsg.ProduceRequestTopicPartition]bool{}
	for _, j := range jobs {
		if j.code != 0 {
			bad.Refuse(j.topic, j.p.Partition, j.code, j.msg)
			refused[j.p] = true
		}
	}
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		parts := t.Partitions[:0]
		for i := range t.Partitions {
			if !refused[&t.Partitions[i]] {
				parts = append(parts, t.Partitions[i])
			}
		}
		if len(parts) > 0 {
			t.Partitions = parts
			kept = append(kept, t)
		}
	}
	req.Topics = kept
	switch {
	case len(bad) == 0:
	case len(kept) == 0:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		bad.AddTo(resp)
		x.Answer(resp)
	default:
		x.Set(e, bad)
	}
	return nil
}

// encryptJob encrypts one partition's records in place, or sets the error it is refused with.
// A KEK that the KMS says does not exist when asked for a DEK (deleted since its existence was
// cached) is then a KEK that does not exist: the partition is refused under REJECT, or forwarded
// in the clear, as the next request's would be.
func (e *encryptor) encryptJob(ctx context.Context, j *produceJob, x *filter.Exchange) {
	enc, sealed, err := e.encryptPartition(ctx, j.kekID, j.topic, j.p.Records, x)
	if err == nil {
		err = x.Allowance.Emit(len(enc))
	}
	switch {
	case errors.Is(err, ErrKEKNotFound):
		e.rememberKEK(j.kekID, false)
		if j.code, j.msg = e.noKEK(j.topic, j.kekID); j.code == 0 {
			e.m.unencrypted("", countRecords(j.p.Records))
		}
	case err != nil:
		j.code, j.msg = produceError(err)
	default:
		j.p.Records = enc
		e.m.encrypted(j.topic, sealed.values)
		e.m.unencrypted(j.topic, sealed.records-sealed.values)
	}
}

// noKEK is the error a partition of a topic without a KEK gets: none unless the policy is REJECT.
func (e *encryptor) noKEK(topic, kekID string) (int16, string) {
	if !e.reject {
		return 0, ""
	}
	return errPolicyViolation, fmt.Sprintf("RecordEncryption: topic %s has no KEK %s, and unresolvedKeyPolicy is REJECT", topic, kekID)
}

// produceJob is one partition of a Produce request: its topic's KEK, and the error it is
// refused with (code 0: not refused).
type produceJob struct {
	topic, kekID string
	exists       bool
	p            *kmsg.ProduceRequestTopicPartition
	code         int16
	msg          string
}

// produceJobs resolves each topic's KEK (once per topic) and lists the partitions. A topic
// whose name is not a legal topic name (empty, as Produce v13's topic ids leave it, or with
// characters Kafka refuses) is refused before any KMS call: its name would become a KEK id.
func (e *encryptor) produceJobs(ctx context.Context, req *kmsg.ProduceRequest, l *lookups) []produceJob {
	var jobs []produceJob
	for ti := range req.Topics {
		t := &req.Topics[ti]
		kekID := e.kekID(t.Topic)
		var exists bool
		var err error
		if legalTopic(t.Topic) {
			exists, err = e.kekExists(ctx, kekID, l)
		}
		for pi := range t.Partitions {
			j := produceJob{topic: t.Topic, kekID: kekID, exists: exists, p: &t.Partitions[pi]}
			switch {
			case !legalTopic(t.Topic):
				j.code, j.msg = errInvalidTopic, "RecordEncryption: the topic name is not a legal Kafka topic name"
			case errors.Is(err, errThrottled):
				j.code, j.msg = errRequestTimedOut, "RecordEncryption: too many distinct topics to look up keys for at once; retry"
			case err != nil:
				j.code, j.msg = errRequestTimedOut, "RecordEncryption: the KMS is unavailable; retry"
			case !exists:
				if j.code, j.msg = e.noKEK(t.Topic, kekID); j.code == 0 {
					e.m.unencrypted("", countRecords(j.p.Records))
				}
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// kekID is the id of a topic's KEK, by the selector's template.
func (e *encryptor) kekID(topic string) string {
	return strings.ReplaceAll(e.template, topicPlaceholder, topic)
}

// lookupsFor is the look-up count of one request or response, with its connection's quota.
func (e *encryptor) lookupsFor(x *filter.Exchange) *lookups {
	l := &lookups{}
	if x.Conn != nil {
		l.conn = x.Conn.State(e, func() any { return &connQuota{} }).(*connQuota)
	}
	return l
}

// PartitionwiseFetch says that a Fetch response is decrypted partition by partition, each on its
// own: the chain may stream it (filter.PartitionwiseFetch).
func (e *encryptor) PartitionwiseFetch() {}

// OnResponse adds refused Produce partitions, and decrypts Fetch and ShareFetch responses.
func (e *encryptor) OnResponse(ctx context.Context, x *filter.Exchange) error {
	switch resp := x.Response.(type) {
	case *kmsg.ProduceResponse:
		if bad, _ := x.Get(e).(filter.Refusals); len(bad) > 0 {
			bad.AddTo(resp)
		}
	case *kmsg.FetchResponse:
		e.decryptFetch(ctx, x, resp)
	case *kmsg.ShareFetchResponse:
		e.decryptShareFetch(ctx, x, resp)
	}
	return nil
}

// decryptFetch decrypts the records of a Fetch response, partition by partition. A partition
// it cannot decrypt now fails with a retriable error, one the KMS refuses to unwrap the DEK of
// with an error that is not retried; one whose batch alone is over the limits with
// MESSAGE_TOO_LARGE; one that finds the response's share spent by the partitions before it is
// sent without records, as a broker does when a response is full, and comes with a later fetch.
// Never is ciphertext handed out as if it were the record.
func (e *encryptor) decryptFetch(ctx context.Context, x *filter.Exchange, resp *kmsg.FetchResponse) {
	var jobs []fetchedPart
	l := e.lookupsFor(x)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		may, label := e.mayHoldEncrypted(ctx, t.Topic, l)
		if !may {
			continue // passed on as the broker sent it, not decompressed
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			jobs = append(jobs, fetchedPart{topic: t.Topic, label: label, partition: p.Partition, records: &p.RecordBatches, code: &p.ErrorCode})
		}
	}
	e.decryptParts(ctx, x, l, jobs)
}

// mayHoldEncrypted reports whether a fetched topic's records must be decoded to look for
// encrypted ones: not when its KEK does not exist, as the filter then never encrypted for it.
// When that cannot be known now (KMS down, look-ups spent), they are decoded. label is the
// topic's metrics label: its name only when its KEK exists.
func (e *encryptor) mayHoldEncrypted(ctx context.Context, topic string, l *lookups) (may bool, label string) {
	if !legalTopic(topic) {
		return true, ""
	}
	exists, err := e.kekExists(ctx, e.kekID(topic), l)
	if exists {
		label = topic
	}
	return exists || err != nil, label
}

// parallelFrom is the size of a request or response from which its partitions are encrypted or
// decrypted on several cores: below it, starting goroutines costs more than it saves.
const parallelFrom = 256 << 10

func worthParallel[J any](jobs []J, size func(J) int) bool {
	n := 0
	for _, j := range jobs {
		n += size(j)
	}
	return len(jobs) > 1 && n >= parallelFrom
}

// eachParallel runs f for 0..n-1, on up to GOMAXPROCS goroutines when parallel. A panic in f
// (a dependency's bug on hostile bytes) is passed to the caller, whose connection then ends,
// rather than taking the process down from a goroutine of its own.
func eachParallel(n int, parallel bool, f func(i int)) {
	if !parallel {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Value
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					panicked.CompareAndSwap(nil, fmt.Sprint(r))
				}
			}()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
	if r := panicked.Load(); r != nil {
		panic(r)
	}
}

// produceError is the error a producer gets for a partition the filter could not encrypt:
// records it cannot read or that are too large are not retried; a KMS that cannot answer, or
// memory in use by other requests, is. The message is fixed: the KMS's own words are logged,
// never sent to a client.
func produceError(err error) (int16, string) {
	switch {
	case errors.Is(err, records.ErrTooLarge):
		return errMessageTooLarge, "RecordEncryption: the records are too large once decompressed (limits.maxBatchBytes, limits.decompressionRatio)"
	case errors.Is(err, filter.ErrBusy):
		return errRequestTimedOut, "RecordEncryption: the proxy's filter memory is in use; retry"
	case errors.Is(err, records.ErrUnsupported):
		return errUnsupportedFmt, "RecordEncryption: only message format v2 record batches are encrypted"
	case errors.Is(err, errControlBatch):
		return errInvalidRecord, "RecordEncryption: clients may not write control batches"
	case errors.Is(err, records.ErrMalformed):
		return errCorruptMessage, "RecordEncryption: the records are not whole, valid record batches"
	case errors.Is(err, ErrKMSRefused):
		return errKMSRefused, "RecordEncryption: the KMS refuses to make data keys under the topic's KEK"
	default:
		return errRequestTimedOut, "RecordEncryption: the KMS is unavailable; retry"
	}
}

// errControlBatch is a Produce batch with the control bit set: only brokers write transaction
// markers, and a control batch's records would pass unencrypted.
var errControlBatch = errors.New("a control batch from a client")

// kekExists asks the KMS whether a KEK exists, remembering the answer "it does" for
// tune.kekFoundTTL and "it does not" for tune.kekNotFoundTTL; an uncached look-up counts
// against l.
func (e *encryptor) kekExists(ctx context.Context, kekID string, l *lookups) (bool, error) {
	exists, ok := e.kekSeen.get(kekID)
	e.m.kekLookup(ok)
	if ok {
		return exists, nil
	}
	if !l.take(true) {
		return false, errThrottled
	}
	err := e.guard.call(ctx, opExists, kekID, func() (err error) {
		if exists, err = e.kms.Exists(ctx, kekID); err == nil && !exists {
			err = ErrKEKNotFound // counted as such
		}
		return err
	})
	if err != nil && !errors.Is(err, ErrKEKNotFound) {
		return false, err
	}
	e.rememberKEK(kekID, exists)
	return exists, nil
}

// rememberKEK caches whether a KEK exists; a KEK found not to exist has no current DEK.
func (e *encryptor) rememberKEK(kekID string, exists bool) {
	if exists {
		e.kekSeen.putFor(kekID, true, e.tune.kekFoundTTL)
		return
	}
	e.kekSeen.putFor(kekID, false, e.tune.kekNotFoundTTL)
	e.mu.Lock()
	delete(e.deks, kekID)
	e.mu.Unlock()
}

// dek returns the current DEK of a KEK, making a new one when none is left for n more records,
// and the first of the n nonce counters reserved for them (dekState.nonce).
func (e *encryptor) dek(ctx context.Context, kekID string, n int) (*dekState, uint64, error) {
	e.mu.Lock()
	d := e.deks[kekID]
	if d != nil && d.uses+int64(n) <= e.tune.maxEncryptionsPerDEK && time.Since(d.created) < e.tune.dekLifetime {
		first := uint64(d.uses)
		d.uses += int64(n)
		e.mu.Unlock()
		return d, first, nil
	}
	e.mu.Unlock()
	var key, edek []byte
	err := e.guard.call(ctx, opGenerateDEK, kekID, func() (err error) { key, edek, err = e.kms.GenerateDEK(ctx, kekID); return err })
	if err != nil {
		return nil, 0, err
	}
	aead, err := newGCM(key)
	if err != nil {
		return nil, 0, err
	}
	d = &dekState{aead: aead, edek: edek, uses: int64(n), created: time.Now()}
	if _, err := randRead(d.nonceBase[:]); err != nil {
		return nil, 0, err
	}
	e.m.deks.Inc()
	e.mu.Lock()
	e.deks[kekID] = d
	e.mu.Unlock()
	return d, 0, nil
}

// sealedCount is how many records a partition had, and how many of them had a value to encrypt.
type sealedCount struct{ records, values int }

// encryptPartition encrypts a partition's batches into one pooled buffer: uncompressed ones
// by the direct codec (direct.go), others decoded and re-encoded.
func (e *encryptor) encryptPartition(ctx context.Context, kekID, topic string, raw []byte, x *filter.Exchange) ([]byte, sealedCount, error) {
	var n sealedCount
	batches, rest, err := records.Split(raw)
	if err != nil || len(rest) > 0 {
		return nil, n, fmt.Errorf("the records of %s do not split into whole batches: %w", topic, errOr(err, fmt.Errorf("%w: a partial batch", records.ErrMalformed)))
	}
	var out []byte
	for _, b := range batches {
		v, err := viewBatch(b, x.Allowance)
		if err != nil {
			return nil, n, err
		}
		if v == nil {
			if out == nil {
				// Each value grows by its wrapped DEK, nonce, tag and marker: room for about 100
				// bytes more per record of 1 KiB, and the buffer goes back to its pool once the
				// request is encoded.
				out = x.Scratch(len(raw) + len(raw)/8)
			}
			if out, err = e.encryptDecoded(ctx, out, b, kekID, topic, x.Allowance, &n); err != nil {
				return nil, n, err
			}
			continue
		}
		out, err = e.encryptDirect(ctx, out, b, v, kekID, topic, x, batches)
		c := v.sealedRecords()
		n.records, n.values = n.records+c.records, n.values+c.values
		v.release()
		if err != nil {
			return nil, n, err
		}
	}
	return out, n, nil
}

// encryptDirect appends an uncompressed batch, read in place as v, with its values sealed. The
// partition's output buffer is made with the first batch, for all of them once sealed.
func (e *encryptor) encryptDirect(ctx context.Context, out, b []byte, v *batchView, kekID, topic string, x *filter.Exchange, batches [][]byte) ([]byte, error) {
	d, first, err := e.dek(ctx, kekID, len(v.records))
	if err != nil {
		return nil, err
	}
	s := e.directSealer(kekID, topic, d, first)
	// Memory is reserved before it is allocated: the whole partition's buffer when it is made
	// (a small first batch must not let a large buffer through), later only what outgrows it.
	need := len(b) + len(v.records)*s.growth()
	if out == nil {
		need = 0
		for _, b := range batches {
			need += len(b) + batchRecords(b)*s.growth()
		}
	} else if len(out)+need <= cap(out) {
		need = 0
	}
	if err := x.Allowance.Reserve(need); err != nil {
		return nil, err
	}
	if out == nil {
		out = x.Scratch(need)
	}
	return s.appendBatch(out, b, v), nil
}

// encryptDecoded appends a batch the direct codec does not take, decoded, sealed and re-encoded.
func (e *encryptor) encryptDecoded(ctx context.Context, out, b []byte, kekID, topic string, a records.Allowance, n *sealedCount) ([]byte, error) {
	batch, err := records.DecodeWithin(b, a)
	if err != nil {
		return nil, err
	}
	defer batch.Release()
	if batch.Header.Attributes&0x20 != 0 {
		return nil, errControlBatch
	}
	d, first, err := e.dek(ctx, kekID, len(batch.Records))
	if err != nil {
		return nil, err
	}
	rw, values := e.rewriter(batch, kekID, topic, d, first)
	n.records, n.values = n.records+len(batch.Records), n.values+values
	return batch.AppendRewritten(out, rw)
}

// decryptPartition decrypts a fetched partition's records, and says how many it decrypted.
func (e *encryptor) decryptPartition(ctx context.Context, topic string, raw []byte, a records.Allowance, l *lookups) ([]byte, int, error) {
	batches, rest, err := records.Split(raw)
	if err != nil {
		return nil, 0, err
	}
	decrypted := 0
	// Re-encoded in place: a decrypted batch is never longer than the batch it was read from
	// when uncompressed (each record loses its nonce, tag, wrapped DEK and marker, and each field
	// is written at or before where it was read), so the output overtakes no byte still to be
	// read. The capacity of out ends where the current batch ends: a re-compressed batch that
	// would grow past it is appended to a new buffer instead, and the later batches stay intact.
	out, end := raw[:0:0], 0
	changed := false
	var last openedDEK
	for _, b := range batches {
		end += len(b)
		if inPlace(out, raw) {
			out = raw[:len(out):end]
		}
		var k int
		var did bool
		var v *batchView
		if v, err = viewBatch(b, a); err != nil {
			return nil, 0, err
		}
		if v != nil {
			out, k, did, err = e.decryptDirect(ctx, out, b, v, topic, a, l, &last)
		} else {
			out, k, did, err = e.decryptDecoded(ctx, out, b, topic, a, l, &last)
		}
		if err != nil {
			return nil, 0, err
		}
		decrypted += k
		changed = changed || did
	}
	if !changed {
		return raw, 0, nil // nothing was encrypted: the broker's bytes as they are
	}
	if inPlace(out, raw) {
		out = raw[:len(out):len(raw)]
	}
	return append(out, rest...), decrypted, nil
}

// decryptDirect appends an uncompressed batch, read in place as v, with its kafkalink values
// decrypted where they lie; a batch with none is appended as it is, and one holding
// Kroxylicious' format is decoded (decryptDecoded).
func (e *encryptor) decryptDirect(ctx context.Context, out, b []byte, v *batchView, topic string, a records.Allowance, l *lookups, last *openedDEK) ([]byte, int, bool, error) {
	defer v.release()
	switch {
	case v.krox:
		return e.decryptDecoded(ctx, out, b, topic, a, l, last)
	case !v.marked:
		return appendUnmoved(out, b), 0, false, nil
	}
	start, decrypted := len(out), 0
	out = append(out, b[:batchHeaderLen]...)
	for i := range v.records {
		r := &v.records[i]
		var plain []byte
		opened := false
		if r.markStart >= 0 && r.value != nil {
			var err error
			if plain, opened, err = e.openSealed(ctx, r.value, topic, l, last); err != nil {
				return nil, 0, false, err
			}
		}
		if !opened {
			out = append(binary.AppendVarint(out, int64(r.end-r.body)), b[r.body:r.end]...)
			continue
		}
		decrypted++
		body := r.keyEnd - r.body + varintLen(int64(len(plain))) + len(plain) + varintLen(int64(r.count-1)) + r.end - r.headers - (r.markEnd - r.markStart)
		out = binary.AppendVarint(out, int64(body))
		out = append(out, b[r.body:r.keyEnd]...)
		out = append(binary.AppendVarint(out, int64(len(plain))), plain...)
		out = binary.AppendVarint(out, int64(r.count-1))
		out = append(append(out, b[r.headers:r.markStart]...), b[r.markEnd:r.end]...)
	}
	finishBatch(out, start)
	return out, decrypted, true, nil
}

// appendUnmoved appends b to out, which when decrypting in place is often where b already is.
func appendUnmoved(out, b []byte) []byte {
	if len(b) > 0 && cap(out) >= len(out)+len(b) && &out[:len(out)+1][len(out)] == &b[0] {
		return out[:len(out)+len(b)]
	}
	return append(out, b...)
}

// decryptDecoded appends a batch decoded, its encrypted records decrypted and re-encoded, or as
// the broker sent it when it holds none (or is not a batch this filter reads).
func (e *encryptor) decryptDecoded(ctx context.Context, out, b []byte, topic string, a records.Allowance, l *lookups, last *openedDEK) ([]byte, int, bool, error) {
	batch, err := records.DecodeWithin(b, a)
	if errors.Is(err, records.ErrTooLarge) || errors.Is(err, filter.ErrBusy) {
		// It may hold encrypted records: never pass it on unread. The consumer retries.
		return nil, 0, false, err
	}
	if err != nil || !anyEncrypted(batch) {
		if batch != nil {
			batch.Release()
		}
		return appendUnmoved(out, b), 0, false, nil // not ours to change: passed on as the broker sent it
	}
	defer batch.Release()
	decrypted := 0
	for i := range batch.Records {
		opened, err := e.decryptRecord(ctx, &batch.Records[i], topic, l, last)
		if err != nil {
			return nil, 0, false, err
		}
		decrypted += b2i(opened)
	}
	out, err = batch.AppendTo(out)
	return out, decrypted, err == nil, err
}

// inPlace reports whether out is still being written over raw (it is until an append outgrew
// the room left in raw); the empty out of the start is.
func inPlace(out, raw []byte) bool {
	return cap(out) == 0 || (cap(raw) > 0 && &out[:1][0] == &raw[:1][0])
}

func anyEncrypted(b *records.Batch) bool {
	for _, r := range b.Records {
		if encryptedHeader(r) >= 0 || kroxyliciousHeader(r) >= 0 {
			return true
		}
	}
	return false
}

// encryptedHeader is the index of the filter's header: the last one with its key, since the
// filter appends it after the record's own headers (which could use the same key).
func encryptedHeader(r kmsg.Record) int {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == HeaderKey {
			return i
		}
	}
	return -1
}

// aad binds a value's ciphertext to its topic, so it cannot be moved to another topic unnoticed.
// It does not bind the record's key or position: docs/record-encryption.md says why.
func aad(topic string) []byte { return []byte("kafkalink.io/encryption/v1\x00" + topic) }

// sealer writes the encrypted values of one batch's records under one DEK
// (docs/record-encryption.md): the prefix (version, KEK id, wrapped DEK) is the same for all.
type sealer struct {
	batch  *records.Batch
	d      *dekState
	first  uint64 // the nonce counter of the batch's first record
	prefix []byte
	aad    []byte
	values int // records with a value, which are encrypted
}

func newSealer(b *records.Batch, kekID, topic string, d *dekState, first uint64) *sealer {
	prefix := []byte{FormatVersion}
	prefix = binary.AppendUvarint(prefix, uint64(len(kekID)))
	prefix = append(prefix, kekID...)
	prefix = binary.AppendUvarint(prefix, uint64(len(d.edek)))
	prefix = append(prefix, d.edek...)
	// Every encrypted record is marked with the header, after its own headers. Null values
	// (tombstones) stay null and unmarked.
	values := 0
	for i := range b.Records {
		if r := &b.Records[i]; r.Value != nil {
			r.Headers = append(r.Headers, kmsg.Header{Key: HeaderKey, Value: []byte{FormatVersion}})
			values++
		}
	}
	return &sealer{batch: b, d: d, first: first, prefix: prefix, aad: aad(topic), values: values}
}

// rewrite is the records.Rewrite that writes each value's encrypted form into the batch.
func (s *sealer) rewrite() *records.Rewrite {
	return &records.Rewrite{
		Len: func(i int) int {
			if s.batch.Records[i].Value == nil {
				return -1
			}
			return len(s.prefix) + s.d.aead.NonceSize() + len(s.batch.Records[i].Value) + s.d.aead.Overhead()
		},
		Append: func(dst []byte, i int) ([]byte, error) {
			nonce := s.d.nonce(s.first + uint64(i))
			dst = append(append(dst, s.prefix...), nonce[:]...)
			return s.d.aead.Seal(dst, nonce[:], s.batch.Records[i].Value, s.aad), nil
		},
	}
}

// errMalformedValue marks an encrypted value that is not in the format.
var errMalformedValue = errors.New("encrypted value not in the record encryption format")

// openedDEK is the DEK the previous record of a batch named: a batch's records nearly always
// share one, so the next record skips the cache (its key is built from the wrapped DEK).
type openedDEK struct {
	kekID, edek []byte // copies: the fetched bytes they were read from are written over
	aead        cipher.AEAD
	aad         []byte // the topic's, made once
	buf         []byte // holds kekID and edek
}

// set makes the DEK of kekID and edek the last one opened, by copies of them.
func (o *openedDEK) set(kekID, edek []byte, aead cipher.AEAD) {
	o.buf = append(append(o.buf[:0], kekID...), edek...)
	o.kekID, o.edek, o.aead, o.aad = o.buf[:len(kekID):len(kekID)], o.buf[len(kekID):], aead, nil
}

// decryptRecord decrypts an encrypted record's value in place and reports whether it did. A
// record under a KEK that the KMS says does not exist is left as stored, sealed and marked, as
// the records of a topic whose KEK does not exist are: it cannot be decrypted, and a consumer
// must not wait for it for ever (deleting a KEK is how its records are shredded).
func (e *encryptor) decryptRecord(ctx context.Context, r *kmsg.Record, topic string, l *lookups, last *openedDEK) (bool, error) {
	if isKroxylicious(*r) {
		err := e.decryptKroxylicious(ctx, r, l, last)
		if errors.Is(err, ErrKEKNotFound) {
			return false, nil // as kafkalink's: handed out sealed
		}
		return err == nil && r.Value != nil, err
	}
	hi := encryptedHeader(*r)
	if hi < 0 || r.Value == nil {
		return false, nil
	}
	plain, opened, err := e.openSealed(ctx, r.Value, topic, l, last)
	if !opened || err != nil {
		return false, err
	}
	if plain == nil {
		plain = []byte{} // an empty value, not a tombstone: GCM returns nil for no plaintext
	}
	r.Value = plain
	r.Headers = append(r.Headers[:hi], r.Headers[hi+1:]...)
	return true, nil
}

// openSealed decrypts a value in kafkalink's format where it lies (the fetched bytes are written
// over afterwards and never used again). opened is false, with no error, for a value under a
// KEK the KMS says does not exist: it is handed out as stored.
func (e *encryptor) openSealed(ctx context.Context, value []byte, topic string, l *lookups, last *openedDEK) (plain []byte, opened bool, err error) {
	kekID, edek, v, err := parseSealed(value)
	if err != nil {
		return nil, false, err
	}
	if last.aead == nil || !bytes.Equal(kekID, last.kekID) || !bytes.Equal(edek, last.edek) {
		if !legalKEKID(string(kekID)) {
			return nil, false, errMalformedValue
		}
		aead, err := e.openDEK(ctx, string(kekID), edek, l)
		if errors.Is(err, ErrKEKNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		last.set(kekID, edek, aead)
	}
	if last.aad == nil { // set by kafkalink's format only: Kroxylicious' binds none
		last.aad = aad(topic)
	}
	ct := v[nonceLen:]
	plain, err = last.aead.Open(ct[:0], v[:nonceLen], ct, last.aad)
	if err != nil {
		return nil, false, fmt.Errorf("a record of %s does not decrypt: %w", topic, err)
	}
	return plain, true, nil
}

// parseSealed splits an encrypted value (format version 1) into the KEK id, the wrapped DEK, and
// the nonce with the ciphertext; the lengths come from the broker's bytes and are checked
// against what is there.
func parseSealed(v []byte) (kekID, edek, rest []byte, err error) {
	if len(v) < 1 || v[0] != FormatVersion {
		return nil, nil, nil, errMalformedValue
	}
	v = v[1:]
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > uint64(len(v)-k) {
			return nil, false
		}
		f := v[k : k+int(n)]
		v = v[k+int(n):]
		return f, true
	}
	kekID, ok1 := field()
	edek, ok2 := field()
	if !ok1 || !ok2 || len(v) < 12 {
		return nil, nil, nil, errMalformedValue
	}
	return kekID, edek, v, nil
}

// openDEK unwraps a DEK, from the cache when this KEK id and wrapped DEK were seen before (the
// KEK id is part of the cache key: a record naming another KEK is unwrapped under that KEK, not
// served a DEK cached for the first). An uncached unwrap counts against l. The KMS's answer
// that it will not unwrap it (no such KEK, or refused) is remembered for tune.kekNotFoundTTL:
// a consumer that fetches those records again and again does not call the KMS each time.
func (e *encryptor) openDEK(ctx context.Context, kekID string, edek []byte, l *lookups) (cipher.AEAD, error) {
	cacheKey := kekID + "\x00" + string(edek)
	aead, ok := e.opened.get(cacheKey)
	e.m.dekLookup(ok)
	if ok {
		return aead, nil
	}
	if err, ok := e.unopened.get(cacheKey); ok {
		return nil, err
	}
	if !l.take(false) {
		return nil, errThrottled
	}
	var key []byte
	err := e.guard.call(ctx, opDecryptDEK, kekID, func() (err error) { key, err = e.kms.DecryptDEK(ctx, kekID, edek); return err })
	if errors.Is(err, ErrKEKNotFound) || errors.Is(err, ErrKMSRefused) {
		e.unopened.put(cacheKey, err)
	}
	if err != nil {
		return nil, err
	}
	if aead, err = newGCM(key); err != nil {
		return nil, err
	}
	e.opened.put(cacheKey, aead)
	return aead, nil
}
