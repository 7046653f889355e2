package encryption

import (
	"encoding/json"
	"os"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// New builds the filter as the proxy does: the registered type, its config decoded strictly.
func New(raw json.RawMessage) (filter.Filter, error) {
	return filter.New("RecordEncryption", raw, filter.Env{ReadFile: os.ReadFile, VirtualCluster: "test"})
}
