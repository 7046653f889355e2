package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"strconv"
	"strings"
	"text/template"
)

// franzGo is a Go file of package kafkaclient whose Options are the client's kgo options. It
// reads the key material and secrets from the files beside it at run time, so that the source
// holds no credential.
func franzGo(b *Binding, dir string) *Output {
	data := codeData(b)
	data["Dir"] = strconv.Quote(dir)
	var seeds []string
	for _, s := range b.BootstrapServers {
		seeds = append(seeds, strconv.Quote(s))
	}
	data["Seeds"] = strings.Join(seeds, ", ")
	data["Username"], data["ClientID"] = strconv.Quote(b.Username), strconv.Quote(b.ClientID)
	data["TokenEndpoint"], data["Scope"] = strconv.Quote(b.TokenEndpoint), strconv.Quote(b.Scope)
	return &Output{
		Files: []File{{Name: fileFranzGo, Data: gofmt(execute(franzGoTemplate, data))}},
		Usage: "copy " + fileFranzGo + " into a package kafkaclient of your module; kgo.NewClient(append(opts, kgo.DefaultProduceTopic(...))...) with opts from kafkaclient.Options()",
	}
}

// kafkaJS is a CommonJS module exporting kafkajs' client configuration.
func kafkaJS(b *Binding) *Output {
	data := codeData(b)
	data["Brokers"] = jsString(b.BootstrapServers)
	data["Username"], data["ClientID"] = jsString(b.Username), jsString(b.ClientID)
	data["TokenEndpoint"], data["Scope"] = jsString(b.TokenEndpoint), jsString(b.Scope)
	// kafkajs names its mechanisms in lower case.
	data["JSMechanism"] = jsString(strings.ToLower(b.Mechanism))
	return &Output{
		Files: []File{{Name: fileKafkaJS, Data: execute(kafkaJSTemplate, data)}},
		Usage: "new Kafka(require('./" + fileKafkaJS + "')) (kafkajs 2; OAUTHBEARER needs Node 18's fetch)",
	}
}

// codeData is what both code templates read.
func codeData(b *Binding) map[string]any {
	return map[string]any{
		"Header": header("//", b), "TLS": b.TLS(), "MTLS": b.ClientCertificate(),
		"Mechanism": b.Mechanism, "OAuth": b.Mechanism == MechanismOAuthBearer, "HasScope": b.Scope != "",
		"FileCA": FileCA, "FileCert": FileClientCert, "FileKey": FileClientKey,
		"FilePassword": FilePassword, "FileOAuthSecret": FileOAuthSecret,
	}
}

// gofmt formats the Go file (its imports sorted), as a user would commit it.
func gofmt(src []byte) []byte {
	out, err := format.Source(src)
	if err != nil {
		panic(fmt.Sprintf("the franz-go template wrote Go that does not parse: %v", err))
	}
	return out
}

func jsString(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and string slices always marshal
	}
	return string(out)
}

func execute(t *template.Template, data map[string]any) []byte {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		panic(err) // the templates are fixed and their data is all strings and booleans
	}
	return buf.Bytes()
}

var franzGoTemplate = template.Must(template.New("franz-go").Parse(`{{.Header}}
// Package kafkaclient holds the franz-go options of a kafkalink binding.
package kafkaclient

import (
{{- if .OAuth}}
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
{{- end}}
{{- if .TLS}}
	"crypto/tls"
	"crypto/x509"
	"errors"
{{- end}}
{{- if or .TLS .Mechanism}}
	"os"
	"path/filepath"
{{- end}}
{{- if .Mechanism}}
	"strings"
{{- end}}

	"github.com/twmb/franz-go/pkg/kgo"
{{- if eq .Mechanism "PLAIN"}}
	"github.com/twmb/franz-go/pkg/sasl/plain"
{{- else if .OAuth}}
	"github.com/twmb/franz-go/pkg/sasl/oauth"
{{- else if .Mechanism}}
	"github.com/twmb/franz-go/pkg/sasl/scram"
{{- end}}
)

// Dir is the folder of the files written beside this one.
var Dir = {{.Dir}}

// Options are the options of a client of the binding; add your own (a default topic, a group).
func Options() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers({{.Seeds}})}
{{- if .TLS}}
	ca, err := os.ReadFile(filepath.Join(Dir, "{{.FileCA}}"))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("{{.FileCA}} holds no certificate")
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
{{- if .MTLS}}
	cert, err := tls.LoadX509KeyPair(filepath.Join(Dir, "{{.FileCert}}"), filepath.Join(Dir, "{{.FileKey}}"))
	if err != nil {
		return nil, err
	}
	tlsConfig.Certificates = []tls.Certificate{cert}
{{- end}}
	opts = append(opts, kgo.DialTLSConfig(tlsConfig))
{{- end}}
{{- if .OAuth}}
	secret, err := os.ReadFile(filepath.Join(Dir, "{{.FileOAuthSecret}}"))
	if err != nil {
		return nil, err
	}
	fetch := func(ctx context.Context) (oauth.Auth, error) {
		token, err := clientCredentialsToken(ctx, {{.TokenEndpoint}}, {{.ClientID}}, strings.TrimSpace(string(secret)), {{.Scope}})
		return oauth.Auth{Token: token}, err
	}
	opts = append(opts, kgo.SASL(oauth.Oauth(fetch)))
{{- else if .Mechanism}}
	password, err := os.ReadFile(filepath.Join(Dir, "{{.FilePassword}}"))
	if err != nil {
		return nil, err
	}
{{- if eq .Mechanism "PLAIN"}}
	opts = append(opts, kgo.SASL(plain.Auth{User: {{.Username}}, Pass: strings.TrimSpace(string(password))}.AsMechanism()))
{{- else if eq .Mechanism "SCRAM-SHA-256"}}
	opts = append(opts, kgo.SASL(scram.Auth{User: {{.Username}}, Pass: strings.TrimSpace(string(password))}.AsSha256Mechanism()))
{{- else}}
	opts = append(opts, kgo.SASL(scram.Auth{User: {{.Username}}, Pass: strings.TrimSpace(string(password))}.AsSha512Mechanism()))
{{- end}}
{{- end}}
	return opts, nil
}
{{- if .OAuth}}

// clientCredentialsToken gets an access token with the OAuth client-credentials grant.
func clientCredentialsToken(ctx context.Context, endpoint, id, secret, scope string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string ` + "`json:\"access_token\"`" + `
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || body.AccessToken == "" {
		return "", fmt.Errorf("token endpoint %s: %s", endpoint, resp.Status)
	}
	return body.AccessToken, nil
}
{{- end}}
`))

var kafkaJSTemplate = template.Must(template.New("kafkajs").Parse(`{{.Header}}
// kafkajs configuration: new Kafka(require('./kafka-config.js')). The key material and secrets
// are read from the files beside this one.
const fs = require('fs');
const path = require('path');
const read = (f) => fs.readFileSync(path.join(__dirname, f), 'utf8');

module.exports = {
  brokers: {{.Brokers}},
{{- if .TLS}}
  ssl: {
    ca: [read('{{.FileCA}}')],
{{- if .MTLS}}
    cert: read('{{.FileCert}}'),
    key: read('{{.FileKey}}'),
{{- end}}
  },
{{- else}}
  ssl: false,
{{- end}}
{{- if .OAuth}}
  sasl: {
    mechanism: 'oauthbearer',
    oauthBearerProvider: async () => {
      const form = new URLSearchParams({ grant_type: 'client_credentials'{{if .HasScope}}, scope: {{.Scope}}{{end}} });
      const basic = Buffer.from(encodeURIComponent({{.ClientID}}) + ':' + encodeURIComponent(read('{{.FileOAuthSecret}}').trim())).toString('base64');
      const res = await fetch({{.TokenEndpoint}}, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: 'Basic ' + basic },
        body: form,
      });
      if (!res.ok) throw new Error('token endpoint: ' + res.status);
      return { value: (await res.json()).access_token };
    },
  },
{{- else if .Mechanism}}
  sasl: {
    mechanism: {{.JSMechanism}},
    username: {{.Username}},
    password: read('{{.FilePassword}}').trim(),
  },
{{- end}}
};
`))
