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
//
// Each produced record value is encrypted with AES-256-GCM under a data key (DEK) that the KMS
// wraps with the topic's key-encryption key (KEK). A DEK serves at most maxRecordsPerDEK records
// and maxDEKAge, then a new one is made: there is never one KMS call per record. The wrapped DEK
// travels in the record; the format is in docs/record-encryption.md. Keys and headers are not
// encrypted. A record that was never encrypted passes through on fetch.
package encryption

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

func init() {
	filter.Register("RecordEncryption", New, checkConfig)
	filter.Register("io.kroxylicious.filter.encryption.RecordEncryption", New, checkConfig)
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
	// Experimental holds Kroxylicious' experimental tuning, accepted and ignored.
	Experimental json.RawMessage `json:"experimental,omitempty"`
}

// Limits of one DEK's use, how long a KEK's existence is remembered, and the sizes of the
// caches (clients choose topic names, so the KEK cache is bounded too).
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
const (
	errCorruptMessage  int16 = 2  // records that are not whole record batches
	errRequestTimedOut int16 = 7  // retriable: the KMS is unavailable
	errUnsupportedFmt  int16 = 43 // message format v0/v1 batches: not encrypted, not written
	errPolicyViolation int16 = 44 // a topic without a KEK under REJECT
	errKafkaStorageErr int16 = 56 // retriable, on fetch: a DEK cannot be unwrapped now
	policyPassthrough        = "PASSTHROUGH_UNENCRYPTED"
	policyReject             = "REJECT"
)

type encryptor struct {
	kms      KMS
	template string
	reject   bool

	mu      sync.Mutex
	deks    map[string]*dekState // by KEK id
	kekSeen map[string]kekEntry
	opened  map[string]cipher.AEAD // by wrapped DEK
}

type dekState struct {
	aead    cipher.AEAD
	edek    []byte
	uses    int
	created time.Time
}

type kekEntry struct {
	exists bool
	until  time.Time
}

// New builds the filter from its configuration.
func New(raw json.RawMessage) (filter.Filter, error) { return build(raw, os.ReadFile) }

// checkConfig is New with the operator's files (the Vault token and trust store): its check of
// a configuration. It opens no connection.
func checkConfig(raw json.RawMessage, readFile filter.ReadFile) error {
	_, err := build(raw, readFile)
	return err
}

func build(raw json.RawMessage, readFile filter.ReadFile) (*encryptor, error) {
	var cfg Config
	if err := strictJSON(raw, &cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	e := &encryptor{deks: map[string]*dekState{}, kekSeen: map[string]kekEntry{}, opened: map[string]cipher.AEAD{}}
	switch cfg.KMS {
	case KMSSecret:
		var kc struct {
			KeyDir string `json:"keyDir"`
		}
		if err := strictJSON(cfg.KMSConfig, &kc); err != nil || kc.KeyDir == "" {
			return nil, fmt.Errorf("kmsConfig: %s needs keyDir, the folder of a mounted Secret ($(secretDir:…))", KMSSecret)
		}
		e.kms = SecretKMS{Dir: kc.KeyDir}
	case KMSVault:
		v, err := newVaultKMS(cfg.KMSConfig, readFile)
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
	return e, nil
}

// strictJSON decodes a configuration, refusing fields it does not know (a typo is an error, not
// a silently ignored setting).
func strictJSON(raw json.RawMessage, into any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// Keys implements filter.Filter: Produce requests and Fetch responses.
func (e *encryptor) Keys() []int16 { return []int16{0, 1} }

// OnRequest encrypts the record values of a Produce request. A partition whose topic's KEK
// cannot be resolved now (KMS unavailable) is refused with a retriable error and never written
// in the clear; a topic without a KEK passes unencrypted or is refused, as configured.
func (e *encryptor) OnRequest(ctx context.Context, x *filter.Exchange) error {
	req, ok := x.Request.(*kmsg.ProduceRequest)
	if !ok {
		return nil
	}
	jobs := e.produceJobs(ctx, req)
	eachParallel(len(jobs), worthParallel(jobs, func(j produceJob) int { return len(j.p.Records) }), func(i int) {
		j := &jobs[i]
		if j.exists && j.code == 0 {
			enc, err := e.encryptPartition(ctx, j.kekID, j.topic, j.p.Records)
			if err != nil {
				j.code, j.msg = produceErrorCode(err), fmt.Sprintf("RecordEncryption: %v", err)
				return
			}
			j.p.Records = enc
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

// produceJob is one partition of a Produce request: its topic's KEK, and the error it is
// refused with (code 0: not refused).
type produceJob struct {
	topic, kekID string
	exists       bool
	p            *kmsg.ProduceRequestTopicPartition
	code         int16
	msg          string
}

// produceJobs resolves each topic's KEK (once per topic) and lists the partitions.
func (e *encryptor) produceJobs(ctx context.Context, req *kmsg.ProduceRequest) []produceJob {
	var jobs []produceJob
	for ti := range req.Topics {
		t := &req.Topics[ti]
		kekID := strings.ReplaceAll(e.template, topicPlaceholder, t.Topic)
		exists, err := e.kekExists(ctx, kekID)
		for pi := range t.Partitions {
			j := produceJob{topic: t.Topic, kekID: kekID, exists: exists, p: &t.Partitions[pi]}
			switch {
			case err != nil:
				j.code, j.msg = errRequestTimedOut, fmt.Sprintf("RecordEncryption: the KMS cannot say whether KEK %s exists now: %v", kekID, err)
			case !exists && e.reject:
				j.code, j.msg = errPolicyViolation, fmt.Sprintf("RecordEncryption: topic %s has no KEK %s, and unresolvedKeyPolicy is REJECT", t.Topic, kekID)
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// OnResponse adds refused Produce partitions, and decrypts Fetch responses.
func (e *encryptor) OnResponse(ctx context.Context, x *filter.Exchange) error {
	switch resp := x.Response.(type) {
	case *kmsg.ProduceResponse:
		if bad, _ := x.Get(e).(filter.Refusals); len(bad) > 0 {
			bad.AddTo(resp)
		}
	case *kmsg.FetchResponse:
		type fetchJob struct {
			topic string
			p     *kmsg.FetchResponseTopicPartition
		}
		var jobs []fetchJob
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				jobs = append(jobs, fetchJob{resp.Topics[i].Topic, &resp.Topics[i].Partitions[j]})
			}
		}
		eachParallel(len(jobs), worthParallel(jobs, func(j fetchJob) int { return len(j.p.RecordBatches) }), func(i int) {
			p := jobs[i].p
			dec, err := e.decryptPartition(ctx, jobs[i].topic, p.RecordBatches)
			if err != nil {
				// Never hand out ciphertext as if it were the record: the consumer retries.
				p.ErrorCode, p.RecordBatches = errKafkaStorageErr, nil
				return
			}
			p.RecordBatches = dec
		})
	}
	return nil
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

// produceErrorCode is the error a producer gets for a partition the filter could not encrypt:
// records it cannot read are not retried, a KMS that cannot answer is.
func produceErrorCode(err error) int16 {
	switch {
	case errors.Is(err, records.ErrUnsupported):
		return errUnsupportedFmt
	case errors.Is(err, records.ErrMalformed):
		return errCorruptMessage
	default:
		return errRequestTimedOut
	}
}

func (e *encryptor) kekExists(ctx context.Context, kekID string) (bool, error) {
	e.mu.Lock()
	c, ok := e.kekSeen[kekID]
	e.mu.Unlock()
	if ok && time.Now().Before(c.until) {
		return c.exists, nil
	}
	exists, err := e.kms.Exists(ctx, kekID)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	if len(e.kekSeen) >= maxKEKCache {
		clear(e.kekSeen) // a client naming many topics costs KMS calls, not memory
	}
	e.kekSeen[kekID] = kekEntry{exists: exists, until: time.Now().Add(kekCacheTTL)}
	e.mu.Unlock()
	return exists, nil
}

// dek returns the current DEK of a KEK, making a new one when none is left for n more records.
func (e *encryptor) dek(ctx context.Context, kekID string, n int) (*dekState, error) {
	e.mu.Lock()
	d := e.deks[kekID]
	if d != nil && d.uses+n <= maxRecordsPerDEK && time.Since(d.created) < maxDEKAge {
		d.uses += n
		e.mu.Unlock()
		return d, nil
	}
	e.mu.Unlock()
	key, edek, err := e.kms.GenerateDEK(ctx, kekID)
	if err != nil {
		return nil, err
	}
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	d = &dekState{aead: aead, edek: edek, uses: n, created: time.Now()}
	e.mu.Lock()
	e.deks[kekID] = d
	e.mu.Unlock()
	return d, nil
}

func (e *encryptor) encryptPartition(ctx context.Context, kekID, topic string, raw []byte) ([]byte, error) {
	batches, rest, err := records.Split(raw)
	if err != nil || len(rest) > 0 {
		return nil, fmt.Errorf("the records of %s do not split into whole batches: %w", topic, errOr(err, fmt.Errorf("%w: a partial batch", records.ErrMalformed)))
	}
	var out []byte
	for _, b := range batches {
		batch, err := records.Decode(b)
		if err != nil {
			return nil, err
		}
		if batch.Header.Attributes&0x20 != 0 { // a control batch: transaction markers carry no values
			out = append(out, b...)
			continue
		}
		d, err := e.dek(ctx, kekID, len(batch.Records))
		if err != nil {
			return nil, err
		}
		if out, err = batch.AppendRewritten(out, newSealer(batch, kekID, topic, d).rewrite()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *encryptor) decryptPartition(ctx context.Context, topic string, raw []byte) ([]byte, error) {
	batches, rest, err := records.Split(raw)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw))
	changed := false
	for _, b := range batches {
		batch, err := records.Decode(b)
		if err != nil || !anyEncrypted(batch) {
			out = append(out, b...) // not ours to change: passed on as the broker sent it
			continue
		}
		changed = true
		for i := range batch.Records {
			if err := e.decryptRecord(ctx, &batch.Records[i], topic); err != nil {
				return nil, err
			}
		}
		if out, err = batch.AppendTo(out); err != nil {
			return nil, err
		}
	}
	if !changed {
		return raw, nil // nothing was encrypted: the broker's bytes as they are
	}
	return append(out, rest...), nil
}

func anyEncrypted(b *records.Batch) bool {
	for _, r := range b.Records {
		if encryptedHeader(r) >= 0 {
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
func aad(topic string) []byte { return []byte("kafkalink.io/encryption/v1\x00" + topic) }

// sealer writes the encrypted values of one batch's records under one DEK
// (docs/record-encryption.md): the prefix (version, KEK id, wrapped DEK) is the same for all.
type sealer struct {
	batch  *records.Batch
	d      *dekState
	prefix []byte
	aad    []byte
}

func newSealer(b *records.Batch, kekID, topic string, d *dekState) *sealer {
	prefix := []byte{FormatVersion}
	prefix = binary.AppendUvarint(prefix, uint64(len(kekID)))
	prefix = append(prefix, kekID...)
	prefix = binary.AppendUvarint(prefix, uint64(len(d.edek)))
	prefix = append(prefix, d.edek...)
	// Every encrypted record is marked with the header, after its own headers. Null values
	// (tombstones) stay null and unmarked.
	for i := range b.Records {
		if r := &b.Records[i]; r.Value != nil {
			r.Headers = append(r.Headers, kmsg.Header{Key: HeaderKey, Value: []byte{FormatVersion}})
		}
	}
	return &sealer{batch: b, d: d, prefix: prefix, aad: aad(topic)}
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
			var nonce [12]byte
			if _, err := randRead(nonce[:]); err != nil {
				return nil, err
			}
			dst = append(append(dst, s.prefix...), nonce[:]...)
			return s.d.aead.Seal(dst, nonce[:], s.batch.Records[i].Value, s.aad), nil
		},
	}
}

// errMalformedValue marks an encrypted value that is not in the format.
var errMalformedValue = errors.New("encrypted value not in the record encryption format")

func (e *encryptor) decryptRecord(ctx context.Context, r *kmsg.Record, topic string) error {
	hi := encryptedHeader(*r)
	if hi < 0 || r.Value == nil {
		return nil
	}
	v := r.Value
	if len(v) < 1 || v[0] != FormatVersion {
		return errMalformedValue
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
		return errMalformedValue
	}
	aead, err := e.openDEK(ctx, string(kekID), edek)
	if err != nil {
		return err
	}
	// Decrypted in place: the fetched bytes are re-encoded afterwards and never used again.
	ct := v[aead.NonceSize():]
	plain, err := aead.Open(ct[:0], v[:aead.NonceSize()], ct, aad(topic))
	if err != nil {
		return fmt.Errorf("a record of %s does not decrypt: %w", topic, err)
	}
	if plain == nil {
		plain = []byte{} // an empty value, not a tombstone: GCM returns nil for no plaintext
	}
	r.Value = plain
	r.Headers = append(r.Headers[:hi], r.Headers[hi+1:]...)
	return nil
}

// openDEK unwraps a DEK, from the cache when it was seen before.
func (e *encryptor) openDEK(ctx context.Context, kekID string, edek []byte) (cipher.AEAD, error) {
	e.mu.Lock()
	aead := e.opened[string(edek)]
	e.mu.Unlock()
	if aead != nil {
		return aead, nil
	}
	key, err := e.kms.DecryptDEK(ctx, kekID, edek)
	if err != nil {
		return nil, err
	}
	if aead, err = newGCM(key); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if len(e.opened) >= maxDecryptCache {
		clear(e.opened) // bounded; DEKs are few and reused, so refills are rare
	}
	e.opened[string(edek)] = aead
	e.mu.Unlock()
	return aead, nil
}
