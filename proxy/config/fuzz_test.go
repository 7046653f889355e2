package config

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary bytes to the configuration parser: errors are fine, panics are not.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("version: kafkalink.io/proxy-config/v1\nlimits: {idleTimeout: 1e400}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("Parse took over 5s on %q", b)) })
		defer tm.Stop()
		c, err := Parse(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate refuses: %v", err)
		}
	})
}
