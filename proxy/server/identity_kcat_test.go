package server

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSaslTerminationAndAuthorizationWithKcat: kcat (librdkafka) authenticates with
// SCRAM-SHA-512 at the proxy, whose SaslTermination makes "alice" the connection's subject, and
// the Authorization filter after it lets her write orders-1 and not payments; a wrong password
// is refused by the proxy.
func TestSaslTerminationAndAuthorizationWithKcat(t *testing.T) {
	ns := netnsForKcat(t, []string{"a-bootstrap.kafka.test", "a-broker-0.kafka.test", "a-broker-1.kafka.test", "a-broker-2.kafka.test"})
	dir := t.TempDir()
	writeAtomic(t, dir+"/rules.acl", []byte(`from io.kroxylicious.filter.authorization import TopicResource as Topic;
allow User with name = "alice" to * Topic with name like "orders-*";
otherwise deny;
`))
	authz := fmt.Sprintf("  - {name: acl, type: Authorization, config: {authorizer: AclAuthorizerService, authorizerConfig: {aclFile: %s/rules.acl}}}\n", dir)
	tp := startTerminatingProxyOpts(t, authz, true, Options{Listen: listenInNetns(ns)})
	writeAtomic(t, dir+"/ca.crt", tp.pki.pem)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(topic, password string) (string, error) {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "kcat", "-b", fmt.Sprintf("a-bootstrap.kafka.test:%d", tp.pc.Port),
			"-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location="+dir+"/ca.crt",
			"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password="+password,
			"-X", "allow.auto.create.topics=true", "-m", "20", "-P", "-t", topic)
		cmd.Stdin = strings.NewReader("one\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := produce("orders-1", "alice-secret"); err != nil {
		t.Fatalf("kcat as alice could not produce to orders-1: %v\n%s\nproxy:\n%s", err, out, tp.p.logs)
	}
	// librdkafka's words for TOPIC_AUTHORIZATION_FAILED.
	if out, err := produce("payments", "alice-secret"); err == nil || !strings.Contains(out, "Topic authorization failed") {
		t.Errorf("kcat as alice produced to payments: %v\n%s", err, out)
	}
	if out, err := produce("orders-1", "wrong"); err == nil || !strings.Contains(out, "Authentication failed") {
		t.Errorf("kcat with a wrong password: %v\n%s", err, out)
	}
}
