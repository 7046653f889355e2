package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// previousForTest is a synthetic previous config version: it called the bootstrap host of a
// virtual cluster "bootstrap". It shows the mechanism a real previous version will use.
const previousForTest = "kafkalink.io/proxy-config/v0test"

func withPreviousVersion(t *testing.T) {
	t.Helper()
	conversions[previousForTest] = func(cfg map[string]any) error {
		vcs, _ := cfg["virtualClusters"].([]any)
		for i, v := range vcs {
			vc, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("virtualClusters[%d] is not an object", i)
			}
			vc["bootstrapHost"] = vc["bootstrap"]
			delete(vc, "bootstrap")
		}
		return nil
	}
	t.Cleanup(func() { delete(conversions, previousForTest) })
}

func skewConfig(version, bootstrapKey string) string {
	return fmt.Sprintf(`version: %s
listeners:
- {name: tls, port: 9292, keyPairs: [{certificateFile: c, privateKeyFile: k}]}
virtualClusters:
- {name: a, listener: tls, %s: a-bootstrap.example.com, brokerPattern: a-broker-$(nodeId).example.com, targetBootstrap: "kafka:9092"}
`, version, bootstrapKey)
}

func TestSkewPolicy(t *testing.T) {
	tests := map[string]struct {
		previous    bool
		config      string
		wantErr     string
		unsupported bool
	}{
		"the current version is read": {
			config: skewConfig(Version, "bootstrapHost"),
		},
		"the previous version is converted and read": {
			previous: true, config: skewConfig(previousForTest, "bootstrap"),
		},
		"the previous version is refused when this release converts none": {
			config: skewConfig(previousForTest, "bootstrap"), unsupported: true,
			wantErr: `unsupported configuration version kafkalink.io/proxy-config/v0test: this proxy reads kafkalink.io/proxy-config/v1;`,
		},
		"a newer operator's version is refused, naming what this proxy reads": {
			previous: true, config: skewConfig("kafkalink.io/proxy-config/v2", "bootstrapHost"), unsupported: true,
			wantErr: "this proxy reads kafkalink.io/proxy-config/v1 and kafkalink.io/proxy-config/v0test",
		},
		"a config without a version is refused": {
			config: strings.Replace(skewConfig("x", "bootstrapHost"), "version: x\n", "", 1), unsupported: true,
			wantErr: "version (none)",
		},
		"a converted config is still validated": {
			previous: true, config: skewConfig(previousForTest, "bootstrapHost"),
			wantErr: "virtualClusters[0]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.previous {
				withPreviousVersion(t)
			}
			c, err := Parse([]byte(tc.config))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Version != Version || c.VirtualClusters[0].BootstrapHost != "a-bootstrap.example.com" {
					t.Fatalf("parsed %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrUnsupportedVersion) != tc.unsupported {
				t.Fatalf("errors.Is(err, ErrUnsupportedVersion) = %v, want %v", !tc.unsupported, tc.unsupported)
			}
		})
	}
}

// TestNoPreviousVersionYet pins the policy's state: v1 is the first version, so it is the only
// one read. When a v2 comes, v1 moves into conversions and this test changes with it.
func TestNoPreviousVersionYet(t *testing.T) {
	if got := AcceptedVersions(); len(got) != 1 || got[0] != Version {
		t.Fatalf("AcceptedVersions() = %v", got)
	}
}
