package validation

import (
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// build builds the filter as the proxy does (the registered type, its config decoded strictly),
// reading files with readFile.
func build(raw []byte, readFile filter.ReadFile) (*validator, error) {
	f, err := filter.New(Type, raw, filter.Env{ReadFile: readFile})
	if err != nil {
		return nil, err
	}
	return f.(*validator), nil
}
