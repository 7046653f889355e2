package sasl_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

func TestSubjectBuilder(t *testing.T) {
	const fq = `"principalFactory": "io.kroxylicious.proxy.authentication.UserFactory"`
	tests := map[string]struct {
		name, config string
		in, want     string
		err          string
	}{
		"default is the id":      {in: "alice", want: "alice"},
		"no map is the id":       {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", ` + fq + `}]}`, in: "alice", want: "alice"},
		"replace and upper":      {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": "/(.*)@example.com/$1x/U"}], ` + fq + `}]}`, in: "alice@example.com", want: "ALICEX"},
		"whole name must match":  {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": "/al/bob/"}], "principalFactory": "UserFactory"}]}`, in: "alice", want: ""},
		"else identity":          {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": ",x,y,"}, {"else": "identity"}], ` + fq + `}]}`, in: "alice", want: "alice"},
		"else anonymous":         {name: "io.kroxylicious.proxy.internal.subject.DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": ",x,y,"}, {"else": "anonymous"}], ` + fq + `}]}`, in: "alice", want: ""},
		"else not last":          {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"else": "identity"}, {"replaceMatch": ",x,y,"}], ` + fq + `}]}`, err: "map[0]: else may only be the last"},
		"bad flags":              {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": "/x/y/Q"}], ` + fq + `}]}`, err: `flags "Q"`},
		"bad pattern":            {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": "/(/y/"}], ` + fq + `}]}`, err: "the pattern"},
		"two separators":         {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": "/x/y"}], ` + fq + `}]}`, err: "cPATTERNcREPLACEMENTcFLAGS"},
		"unknown from":           {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "clientId", ` + fq + `}]}`, err: `from "clientId"`},
		"unknown factory":        {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipals": [{"from": "saslAuthorizedId", "principalFactory": "GroupFactory"}]}`, err: `principalFactory "GroupFactory"`},
		"unknown builder":        {name: "com.example.Mine", config: `{}`, err: `subjectBuilder "com.example.Mine"`},
		"config without builder": {config: `{"addPrincipals": []}`, err: "without subjectBuilder"},
		"unknown field":          {name: "DefaultSaslSubjectBuilderService", config: `{"addPrincipal": []}`, err: "unknown field"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := sasl.NewSubjectBuilder(tc.name, json.RawMessage(tc.config))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.User(tc.in); got != tc.want {
				t.Fatalf("User(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
