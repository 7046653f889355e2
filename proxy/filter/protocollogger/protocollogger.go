// Package protocollogger is the ProtocolLogger filter: it logs the requests and responses of
// chosen API keys, every field, through the proxy's log (klog) with the virtual cluster's name.
// It is for debugging: what a client sends and what the broker answers, as the filters around
// it see them (place it first, last, or on both sides of another filter).
//
// Its configuration takes Kroxylicious' shape:
//
//	apiKeyNames: [METADATA, FIND_COORDINATOR]  # Kafka's ApiKeys names, any case, with or
//	                                           # without separators; absent or empty: all
//	logLevel: DEBUG        # TRACE, DEBUG (default), INFO, WARN or ERROR
//	loggerName: protocol   # the logger's name (default ProtocolLogger)
//	maxLineBytes: 8192     # kafkalink: the longest message logged (default 8 KiB, 256..1 MiB)
//
// klog has verbosities where SLF4J has levels: TRACE logs at -v=5, DEBUG at -v=4, INFO and WARN
// at -v=0 (always), ERROR as an error. A level the proxy's -v hides logs nothing and formats
// nothing, but the chain still decodes the chosen keys' requests and responses: list only the
// keys wanted (Produce and Fetch are the costly ones).
//
// What is never logged: the bodies of SaslAuthenticate and the delegation-token and SCRAM
// credential APIs (as Kroxylicious, hard-coded: the line says "payloadWithheld"); every byte
// field (records, SASL and telemetry bytes, group member metadata) is logged as its length;
// config values whose name looks secret (password, secret, jaas, key, token, credential) or
// that the broker marks sensitive are logged as null. A message longer than maxLineBytes is cut
// there, and formatting stops when it reaches it.
package protocollogger

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "ProtocolLogger"

const (
	defaultMaxLine = 8 << 10
	minMaxLine     = 256
	maxMaxLine     = 1 << 20
	// maxKey is above every key Kafka defines today; kmsg knows which exist.
	maxKey = 256
)

func init() {
	filter.RegisterTyped(newLogger, Type, "io.kroxylicious.filter.protocollogger.ProtocolLogger")
}

// Config is the filter's configuration.
type Config struct {
	APIKeyNames  []string `json:"apiKeyNames,omitempty"`
	LogLevel     string   `json:"logLevel,omitempty"`
	LoggerName   string   `json:"loggerName,omitempty"`
	MaxLineBytes int      `json:"maxLineBytes,omitempty"`
}

// withheld are the API keys whose bodies carry credentials: never formatted.
var withheld = map[int16]bool{
	kmsg.SASLAuthenticate.Int16():          true,
	kmsg.CreateDelegationToken.Int16():     true,
	kmsg.RenewDelegationToken.Int16():      true,
	kmsg.ExpireDelegationToken.Int16():     true,
	kmsg.DescribeDelegationToken.Int16():   true,
	kmsg.AlterUserSCRAMCredentials.Int16(): true,
	kmsg.Envelope.Int16():                  true, // wraps another request, whatever it carries
}

type protocolLogger struct {
	keys    []int16
	level   string
	name    string
	vc      string
	maxLine int
}

func newLogger(cfg *Config, env filter.Env) (filter.Filter, error) {
	l := &protocolLogger{level: "DEBUG", name: Type, vc: env.VirtualCluster, maxLine: defaultMaxLine}
	if cfg.LogLevel != "" {
		l.level = strings.ToUpper(cfg.LogLevel)
		if _, ok := verbosity[l.level]; !ok && l.level != "ERROR" {
			return nil, fmt.Errorf("logLevel %q is not one of TRACE, DEBUG, INFO, WARN, ERROR", cfg.LogLevel)
		}
	}
	if cfg.LoggerName != "" {
		l.name = cfg.LoggerName
	}
	if cfg.MaxLineBytes != 0 {
		if cfg.MaxLineBytes < minMaxLine || cfg.MaxLineBytes > maxMaxLine {
			return nil, fmt.Errorf("maxLineBytes %d is outside %d..%d", cfg.MaxLineBytes, minMaxLine, maxMaxLine)
		}
		l.maxLine = cfg.MaxLineBytes
	}
	keys, err := resolveKeys(cfg.APIKeyNames)
	if err != nil {
		return nil, err
	}
	l.keys = keys
	return l, nil
}

// verbosity maps SLF4J levels to klog verbosities (ERROR is logged as an error).
var verbosity = map[string]int{"TRACE": 5, "DEBUG": 4, "INFO": 0, "WARN": 0}

// normalize makes Kafka's ApiKeys names and kmsg's comparable: FIND_COORDINATOR,
// find-coordinator and FindCoordinator are one.
func normalize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// resolveKeys turns apiKeyNames into API keys: every key kmsg knows when empty.
func resolveKeys(names []string) ([]int16, error) {
	byName := map[string]int16{}
	var all []int16
	for k := int16(0); k < maxKey; k++ {
		if kmsg.RequestForKey(k) != nil {
			byName[normalize(kmsg.NameForKey(k))] = k
			all = append(all, k)
		}
	}
	if len(names) == 0 {
		return all, nil
	}
	seen := map[int16]bool{}
	var keys []int16
	for _, n := range names {
		k, ok := byName[normalize(n)]
		if !ok {
			return nil, fmt.Errorf("apiKeyNames: unknown API key name %q (Kafka's ApiKeys names, such as METADATA or FIND_COORDINATOR)", n)
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

func (l *protocolLogger) Keys() []int16 { return l.keys }

// OnRequest logs the request.
func (l *protocolLogger) OnRequest(ctx context.Context, x *filter.Exchange) error {
	if log, ok := l.logger(ctx); ok {
		clientID := ""
		if x.ClientID != nil {
			clientID = *x.ClientID
		}
		l.emit(log, "request", x, x.Request, "clientId", clientID)
	}
	return nil
}

// OnResponse logs the response.
func (l *protocolLogger) OnResponse(ctx context.Context, x *filter.Exchange) error {
	if log, ok := l.logger(ctx); ok {
		l.emit(log, "response", x, x.Response)
	}
	return nil
}

// logger is the filter's logger, and whether its level is on.
func (l *protocolLogger) logger(ctx context.Context) (logr.Logger, bool) {
	log := klog.FromContext(ctx).WithName(l.name)
	if l.level == "ERROR" {
		return log, log.GetSink() != nil
	}
	log = log.V(verbosity[l.level])
	return log, log.Enabled()
}

func (l *protocolLogger) emit(log logr.Logger, direction string, x *filter.Exchange, msg any, kv ...any) {
	kv = append(kv, "virtualCluster", l.vc, "direction", direction, "apiKey", kmsg.NameForKey(x.Key), "apiVersion", x.Version, "correlationId", x.CorrelationID)
	if withheld[x.Key] {
		kv = append(kv, "payloadWithheld", "credential-bearing API")
	} else {
		kv = append(kv, "payload", format(msg, l.maxLine))
	}
	text := "Kafka " + direction
	if l.level == "ERROR" {
		log.Error(nil, text, kv...)
		return
	}
	log.Info(text, kv...)
}
