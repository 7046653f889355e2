package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Operator↔proxy skew policy. The operator and the proxy are released together, but during an
// upgrade a proxy pod of one release can read a ConfigMap written by the operator of another.
// A proxy therefore reads:
//
//   - Version, the configuration its own release's operator writes;
//   - the previous configuration version, converted to Version on read, so a proxy upgraded
//     before its operator keeps working.
//
// Any other version (a newer operator's, or one two versions back) is refused with
// ErrUnsupportedVersion. The proxy then keeps serving its last good configuration, logs the
// reason once per change of the file and reports it (kafkalink_proxy_config_rejected and
// /readyz); only at start, with no good configuration, does it exit. An operator therefore
// must not write a new config version until the previous release's proxies read it: a new
// version is introduced in one release as "previous" (readable, not written) and written from
// the next.
//
// kafkalink.io/proxy-config/v1 is the first version, so there is no previous one yet and
// conversions is empty; the mechanism is exercised by tests with a synthetic previous version.

// ErrUnsupportedVersion is wrapped by Parse when the configuration's version is neither Version
// nor a previous version this proxy converts.
var ErrUnsupportedVersion = errors.New("unsupported configuration version")

// Conversion rewrites a configuration of an older version, decoded as generic JSON, into the
// form of Version, in place. Parse sets the version field afterwards.
type Conversion func(cfg map[string]any) error

// conversions maps each older version this proxy reads to its Conversion. It holds at most the
// previous version (see the skew policy above); v1 has none.
var conversions = map[string]Conversion{}

// AcceptedVersions returns the configuration versions Parse accepts: Version first, then the
// older versions it converts.
func AcceptedVersions() []string {
	return append([]string{Version}, slices.Sorted(maps.Keys(conversions))...)
}

// upgrade returns the JSON of a configuration in Version's form: unchanged when it is written in
// Version, converted when it is in an accepted older version, else an ErrUnsupportedVersion.
func upgrade(j []byte) ([]byte, error) {
	var head struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(j, &head); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if head.Version == Version {
		return j, nil
	}
	conv, ok := conversions[head.Version]
	if !ok {
		got := head.Version
		if got == "" {
			got = "(none)"
		}
		return nil, fmt.Errorf("%w %s: this proxy reads %s; the operator and the proxy are more than one configuration version apart",
			ErrUnsupportedVersion, got, strings.Join(AcceptedVersions(), " and "))
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if err := conv(m); err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", head.Version, Version, err)
	}
	m["version"] = Version
	return json.Marshal(m)
}
