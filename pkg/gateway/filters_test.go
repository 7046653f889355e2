package gateway

import (
	"strings"
	"testing"
)

func TestSubstituteFilterSecrets(t *testing.T) {
	tests := map[string]struct {
		in, want, err string
		refs          []FilterSecretRef
	}{
		"a secretFile placeholder becomes the path of the key": {
			in: `{"f":"$(secretFile:kms:token)"}`, want: `{"f":"/opt/kroxylicious/secrets/filter/kms/token"}`,
			refs: []FilterSecretRef{{Secret: "kms", Key: "token"}},
		},
		"a secretDir placeholder inside a longer string becomes the folder": {
			in: `{"a":["x $(secretDir:d) y"],"n":1.50}`, want: `{"a":["x /opt/kroxylicious/secrets/filter/d y"],"n":1.50}`,
			refs: []FilterSecretRef{{Secret: "d"}},
		},
		"a secretFile without a key is refused": {in: `{"f":"$(secretFile:kms)"}`, err: "secretFile:<secret>:<key>"},
		"a secretDir with a key is refused":     {in: `{"f":"$(secretDir:kms:key)"}`, err: "secretDir:<secret>"},
		"a secret name that is not a DNS name is refused": {
			in: `{"f":"$(secretDir:Not_A_Name)"}`, err: "secret name",
		},
		"a path-like key is refused":            {in: `{"f":"$(secretFile:kms:../../etc/passwd)"}`, err: "key"},
		"a config that is not JSON is an error": {in: `{`, err: "not JSON"},
		"no config is nothing":                  {in: ``},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, refs, err := SubstituteFilterSecrets([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got %s, want %s", out, tc.want)
			}
			if len(refs) != len(tc.refs) || (len(refs) > 0 && refs[0] != tc.refs[0]) {
				t.Errorf("refs %v, want %v", refs, tc.refs)
			}
		})
	}
}

func TestTranslateNeverPanicsOnAnEmptySnapshot(t *testing.T) {
	if res := Translate(nil); !res.Hold {
		t.Error("a nil snapshot must hold")
	}
	if res := Translate(&Snapshot{}); !res.Hold {
		t.Error("a snapshot without a gateway must hold")
	}
}
