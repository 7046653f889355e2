// Package validation is the RecordValidation filter: produced records whose value (or key) is
// not valid JSON, or does not match a JSON Schema, are refused with INVALID_RECORD, naming the
// record; the other partitions of the request are written as usual.
//
// Its configuration takes Kroxylicious' shape (the keys both implement carry over; moving a
// KafkaProtocolFilter is in docs/record-encryption.md):
//
//	rules:
//	- topicNames: [orders]
//	  valueRule:
//	    allowNulls: true                         # tombstones pass (default true)
//	    syntacticallyCorrectJson: {}             # the value must be JSON
//	    syntacticallyCorrectJson: {validateObjectKeysUnique: true}  # with no object naming a member twice
//	    jsonSchema: {type: object, required: [id]}  # kafkalink: and match this schema
//	    jsonSchemaFile: /opt/kroxylicious/secrets/filter/schemas/orders.json  # or this one
//	    maxBytes: 1048576                        # kafkalink: the largest value checked (default 1 MiB)
//	  keyRule: {...}
//	defaultRule: {valueRule: {...}}             # topics no rule names
//
// Kroxylicious' schemaValidationConfig (schemas in an Apicurio Registry) is refused at start
// with a clear error: kafkalink reads schemas inline or from files only.
//
// # Limits
//
// The filter reads bytes from clients that may never have authenticated, so what it spends on a
// record is bounded:
//
//   - maxBytes (kafkalink's own field, default 1 MiB, at most 64 MiB) is the largest key or value
//     a rule that checks JSON or a schema accepts: a larger one is refused with INVALID_RECORD,
//     naming the record and the limit, before any of it is read. Set on a rule that checks
//     nothing about the content, it still refuses larger keys or values; unset, such a rule has
//     no limit.
//   - JSON syntax is checked by a state machine that builds no Go values and holds a fixed
//     stack: arrays and objects may nest at most 128 deep (a fixed limit). With
//     validateObjectKeysUnique it also keeps 16 bytes per member name of the objects open at
//     once (a member takes at least 5 bytes of the value, so a few times the value's size at
//     worst). Strings must be UTF-8, as RFC 8259 (and Kroxylicious' Jackson parser) require.
//   - A JSON Schema check first runs that syntax check (so a value is parsed into Go values only
//     when it is within maxBytes and nested at most 128 deep), then builds the document: up to
//     about 55 bytes allocated per byte of value (a 1 MiB array of small numbers: 57 MB).
//   - A schema's $refs resolve only within the rule's own schema document ("#/$defs/…", or a
//     subschema's $id): no file:, http: or other URL is ever loaded, and a schema that refers to
//     one does not build (the operator runs the same check, so the route's status says so). The
//     standard metaschemas ($schema of drafts 4 to 2020-12) are built in.
package validation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "RecordValidation"

func init() {
	filter.RegisterTyped(newValidator, Type, "io.kroxylicious.proxy.filter.validation.RecordValidation")
}

// Config is the filter's configuration.
type Config struct {
	Rules       []TopicRule `json:"rules,omitempty"`
	DefaultRule *Rule       `json:"defaultRule,omitempty"`
}

// TopicRule is a Rule for some topics.
type TopicRule struct {
	TopicNames []string `json:"topicNames"`
	Rule
}

// Rule validates record keys and values.
type Rule struct {
	KeyRule   *BytesRule `json:"keyRule,omitempty"`
	ValueRule *BytesRule `json:"valueRule,omitempty"`
}

// BytesRule validates one part of a record.
type BytesRule struct {
	AllowNulls               *bool           `json:"allowNulls,omitempty"`
	AllowEmpty               bool            `json:"allowEmpty,omitempty"`
	SyntacticallyCorrectJSON *SyntaxRule     `json:"syntacticallyCorrectJson,omitempty"`
	JSONSchema               json.RawMessage `json:"jsonSchema,omitempty"`
	JSONSchemaFile           string          `json:"jsonSchemaFile,omitempty"`
	SchemaValidationConfig   json.RawMessage `json:"schemaValidationConfig,omitempty"`
	// MaxBytes (kafkalink's own) is the largest key or value, in bytes, the rule accepts: a
	// larger one is refused before it is parsed. Default DefaultMaxBytes when the rule checks
	// JSON or a schema, no limit otherwise; at most MaxMaxBytes.
	MaxBytes *int `json:"maxBytes,omitempty"`
}

// SyntaxRule is Kroxylicious' syntacticallyCorrectJson.
type SyntaxRule struct {
	// ValidateObjectKeysUnique refuses a JSON value with an object (at any depth) that names a
	// member twice; names are compared unescaped.
	ValidateObjectKeysUnique bool `json:"validateObjectKeysUnique,omitempty"`
}

// DefaultMaxBytes is BytesRule.MaxBytes when unset: Kafka's default largest record batch.
const DefaultMaxBytes = 1 << 20

// MaxMaxBytes is the largest BytesRule.MaxBytes. A syntax check's memory does not depend on it;
// a schema check allocates up to about 55 times the value's size in Go values while it runs.
const MaxMaxBytes = 64 << 20

// check is a compiled BytesRule.
type check struct {
	allowNulls, allowEmpty, json bool
	uniqueKeys                   bool // syntacticallyCorrectJson.validateObjectKeysUnique
	maxBytes                     int  // 0: no limit
	schema                       *jsonschema.Schema
}

// validator is the filter.
type validator struct {
	topics map[string][2]*check // key check, value check
	def    [2]*check
}

// newValidator compiles the rules of a configuration, reading the schema files it names with
// env.ReadFile.
func newValidator(cfg *Config, env filter.Env) (filter.Filter, error) {
	readFile := env.ReadFile
	v := &validator{topics: map[string][2]*check{}}
	for i, r := range cfg.Rules {
		pair, err := compileRule(r.Rule, fmt.Sprintf("rules[%d]", i), readFile)
		if err != nil {
			return nil, err
		}
		if len(r.TopicNames) == 0 {
			return nil, fmt.Errorf("rules[%d].topicNames: required", i)
		}
		for _, t := range r.TopicNames {
			v.topics[t] = pair
		}
	}
	if cfg.DefaultRule != nil {
		pair, err := compileRule(*cfg.DefaultRule, "defaultRule", readFile)
		if err != nil {
			return nil, err
		}
		v.def = pair
	}
	if len(v.topics) == 0 && v.def == [2]*check{} {
		return nil, errors.New("config: no rules and no defaultRule: the filter would check nothing")
	}
	return v, nil
}

func compileRule(r Rule, path string, readFile filter.ReadFile) ([2]*check, error) {
	var out [2]*check
	for i, br := range []*BytesRule{r.KeyRule, r.ValueRule} {
		if br == nil {
			continue
		}
		c, err := compileBytesRule(br, path+[]string{".keyRule", ".valueRule"}[i], readFile)
		if err != nil {
			return out, err
		}
		out[i] = c
	}
	return out, nil
}

func compileBytesRule(br *BytesRule, path string, readFile filter.ReadFile) (*check, error) {
	if len(br.SchemaValidationConfig) > 0 {
		return nil, fmt.Errorf("%s.schemaValidationConfig: schemas in an Apicurio Registry are not supported; give the schema inline (jsonSchema) or as a file (jsonSchemaFile, from a $(secretFile:…) placeholder)", path)
	}
	c := &check{allowNulls: br.AllowNulls == nil || *br.AllowNulls, allowEmpty: br.AllowEmpty}
	if sc := br.SyntacticallyCorrectJSON; sc != nil {
		c.json, c.uniqueKeys = true, sc.ValidateObjectKeysUnique
	}
	if br.MaxBytes != nil {
		if *br.MaxBytes < 1 || *br.MaxBytes > MaxMaxBytes {
			return nil, fmt.Errorf("%s.maxBytes: %d: must be from 1 to %d (64 MiB)", path, *br.MaxBytes, MaxMaxBytes)
		}
		c.maxBytes = *br.MaxBytes
	}
	schema := br.JSONSchema
	if br.JSONSchemaFile != "" {
		b, err := readFile(br.JSONSchemaFile)
		if err != nil {
			return nil, fmt.Errorf("%s.jsonSchemaFile: %w", path, err)
		}
		schema = b
	}
	if len(schema) == 0 {
		if c.json && c.maxBytes == 0 {
			c.maxBytes = DefaultMaxBytes
		}
		return c, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("%s: the JSON Schema is not JSON: %w", path, err)
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	// An absolute id: a relative one would be resolved against the process's folder, which
	// then shows in messages. A hierarchical one: against an opaque id (urn:…) a relative $ref
	// such as "other.json" resolves to the schema itself, a reference cycle that compiles and
	// then fails every value; against this one it names another document, which noLoader
	// refuses at build.
	const id = "kafkalink:///record-schema"
	if err := comp.AddResource(id, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.schema, err = comp.Compile(id); err != nil {
		return nil, fmt.Errorf("%s: the JSON Schema does not compile: %w", path, err)
	}
	c.json = true
	if c.maxBytes == 0 {
		c.maxBytes = DefaultMaxBytes
	}
	return c, nil
}

// noLoader is the schema compiler's URLLoader: it loads nothing, so that a $ref resolves only
// within the rule's own schema document. The library serves the standard metaschemas itself,
// without asking its loader.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("RecordValidation loads no schema from a URL (file:, http: or any other): a $ref must point into the rule's own schema, as \"#/$defs/name\" or to a subschema's $id")
}

// Keys implements filter.Filter: Produce requests.
func (v *validator) Keys() []int16 { return []int16{0} }

// OnRequest validates every record of a Produce request. Partitions with an invalid record are
// taken out of the request and answered with INVALID_RECORD; when none is left, the filter
// answers the whole request itself.
func (v *validator) OnRequest(_ context.Context, x *filter.Exchange) error {
	req, ok := x.Request.(*kmsg.ProduceRequest)
	if !ok {
		return nil
	}
	bad := filter.Refusals{}
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		checks := v.checksFor(t.Topic)
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			errs, total, err := validatePartition(checks, p.Records, x.Allowance)
			switch {
			case errors.Is(err, filter.ErrBusy):
				bad.Refuse(t.Topic, p.Partition, kerr.RequestTimedOut.Code, "RecordValidation: the proxy's filter memory is in use; retry")
				continue
			case errors.Is(err, records.ErrTooLarge):
				bad.Refuse(t.Topic, p.Partition, kerr.MessageTooLarge.Code, "RecordValidation: the records are too large once decompressed (limits.maxBatchBytes, limits.decompressionRatio)")
				continue
			case total > 0:
				bad.Add(t.Topic, invalidPartition(t.Topic, p.Partition, errs, total))
				continue
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			t.Partitions = parts
			kept = append(kept, t)
		}
	}
	req.Topics = kept
	if len(bad) == 0 {
		return nil
	}
	if len(kept) == 0 {
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		bad.AddTo(resp)
		x.Answer(resp)
		return nil
	}
	x.Set(v, bad)
	return nil
}

// OnResponse adds the refused partitions to the broker's response.
func (v *validator) OnResponse(_ context.Context, x *filter.Exchange) error {
	bad, _ := x.Get(v).(filter.Refusals)
	if resp, ok := x.Response.(*kmsg.ProduceResponse); ok && len(bad) > 0 {
		bad.AddTo(resp)
	}
	return nil
}

func (v *validator) checksFor(topic string) [2]*check {
	if c, ok := v.topics[topic]; ok {
		return c
	}
	return v.def
}

// recordError is one invalid record: its index in the partition's records and why.
type recordError struct {
	index int32
	msg   string
}

// What a refusal tells the producer: the first maxErrorRecords invalid records, each message at
// most maxErrorMessage bytes (a schema's error for a large value can run to megabytes).
const (
	maxErrorRecords = 100
	maxErrorMessage = 512
)

// validatePartition checks every record of a partition's batches, decoded within a;
// undecodable batches are refused as a whole (index -1). It returns the first maxErrorRecords
// invalid records and how many there are in all; err is a batch over a's limits, or the proxy's
// memory in use (filter.ErrBusy).
func validatePartition(checks [2]*check, raw []byte, a *filter.Allowance) (errs []recordError, total int, err error) {
	if checks == [2]*check{} {
		return nil, 0, nil
	}
	batches, rest, err := records.Split(raw)
	if err == nil && len(rest) > 0 {
		err = errors.New("a partial batch")
	}
	if err != nil {
		return []recordError{{-1, err.Error()}}, 1, nil
	}
	var ref refusal
	index := int32(0)
	for _, b := range batches {
		batch, err := records.DecodeWithin(b, a)
		if errors.Is(err, records.ErrTooLarge) || errors.Is(err, filter.ErrBusy) {
			return nil, 0, err
		}
		if err != nil {
			return []recordError{{-1, err.Error()}}, 1, nil
		}
		if index, err = ref.checkBatch(checks, batch, index, a); err != nil {
			return nil, 0, err
		}
	}
	return ref.errs, ref.total, nil
}

// refusal gathers a partition's invalid records: the first maxErrorRecords, and how many.
type refusal struct {
	errs  []recordError
	total int
}

// checkBatch checks the records of one decoded batch, numbered from first, gives the batch's
// buffer back, and returns the number of the record after its last.
func (ref *refusal) checkBatch(checks [2]*check, batch *records.Batch, first int32, a *filter.Allowance) (int32, error) {
	defer batch.Release()
	index := first
	for _, r := range batch.Records {
		for i, part := range [][]byte{r.Key, r.Value} {
			msg, err := checks[i].validateWithin(part, a)
			if err != nil {
				return index, err
			}
			if msg == "" {
				continue
			}
			if ref.total++; len(ref.errs) < maxErrorRecords {
				ref.errs = append(ref.errs, recordError{index, truncate([]string{"key", "value"}[i] + ": " + msg)})
			}
		}
		index++
	}
	return index, nil
}

// truncate cuts a message to maxErrorMessage bytes, on a UTF-8 boundary.
func truncate(msg string) string {
	if len(msg) <= maxErrorMessage {
		return msg
	}
	cut := maxErrorMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// schemaDocCost is what checking a value against a schema holds per byte of the value: the
// document jsonschema builds takes up to about 55 times the JSON it is built from.
const schemaDocCost = 64

// validateWithin is validate holding, while a schema check builds its document, that
// document's size from the process's filter budget.
func (c *check) validateWithin(b []byte, a *filter.Allowance) (string, error) {
	if c == nil || c.schema == nil || len(b) == 0 {
		return c.validate(b), nil
	}
	done, err := a.Hold(schemaDocCost * min(len(b), c.maxBytes+1))
	if err != nil {
		return "", err
	}
	defer done()
	return c.validate(b), nil
}

// validate returns why b fails the check, or "".
func (c *check) validate(b []byte) string {
	switch {
	case c == nil:
		return ""
	case b == nil:
		if c.allowNulls {
			return ""
		}
		return "null is not allowed"
	case len(b) == 0 && c.allowEmpty:
		return ""
	case c.maxBytes > 0 && len(b) > c.maxBytes:
		return fmt.Sprintf("%d bytes, more than the rule's maxBytes (%d)", len(b), c.maxBytes)
	case !c.json:
		return ""
	}
	// The syntax check builds nothing and bounds the nesting, so the schema check below builds
	// Go values only from a value within maxBytes and maxDepth.
	if err := checkJSON(b, c.uniqueKeys); err != nil {
		return "not valid JSON: " + err.Error()
	}
	if c.schema == nil {
		return ""
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return "not valid JSON: " + err.Error()
	}
	if err := c.schema.Validate(doc); err != nil {
		return "does not match the JSON Schema: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	return ""
}

// invalidPartition is the INVALID_RECORD answer for a partition, naming its bad records.
func invalidPartition(topic string, partition int32, errs []recordError, total int) kmsg.ProduceResponseTopicPartition {
	p := kmsg.NewProduceResponseTopicPartition()
	p.Partition = partition
	p.ErrorCode = kerr.InvalidRecord.Code
	p.BaseOffset, p.LogAppendTime, p.LogStartOffset = -1, -1, -1
	first := errs[0]
	msg := fmt.Sprintf("RecordValidation refused record %d of %s-%d: %s", first.index, topic, partition, first.msg)
	if first.index < 0 {
		msg = fmt.Sprintf("RecordValidation refused the records of %s-%d: %s", topic, partition, first.msg)
	}
	if total > 1 {
		msg += fmt.Sprintf(" (and %d more)", total-1)
	}
	p.ErrorMessage = &msg
	for _, e := range errs {
		if e.index < 0 {
			continue
		}
		er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		er.RelativeOffset = e.index
		m := e.msg
		er.ErrorMessage = &m
		p.ErrorRecords = append(p.ErrorRecords, er)
	}
	return p
}
