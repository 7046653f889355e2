package plugin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
)

// readProperties is a Java program that loads .properties files with java.util.Properties, as
// Apache Kafka's clients, Spring Boot and Quarkus read them, and prints each property as
// file<TAB>key<TAB>value with line breaks shown as \n.
const readProperties = `import java.io.FileReader;
import java.util.Properties;
import java.util.TreeSet;

public class ReadProperties {
    public static void main(String[] args) throws Exception {
        for (String file : args) {
            Properties p = new Properties();
            try (FileReader r = new FileReader(file)) { p.load(r); }
            for (String k : new TreeSet<>(p.stringPropertyNames())) {
                System.out.println(file + "\t" + k + "\t" + p.getProperty(k).replace("\n", "\\n"));
            }
        }
    }
}
`

// goldenFiles extracts one file of each of pkg/clientconfig's golden files of a client into dir,
// as <protocol>.<ext>, and returns their paths.
func goldenFiles(t *testing.T, client, name, ext, dir string) []string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	goldens, err := filepath.Glob(filepath.Join(root, "pkg", "clientconfig", "testdata", client, "*.golden"))
	if err != nil || len(goldens) < 6 {
		t.Fatalf("found %d %s golden files (%v)", len(goldens), client, err)
	}
	var paths []string
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		src, ok := section(string(data), name)
		if !ok {
			t.Fatalf("%s has no %s", g, name)
		}
		path := filepath.Join(dir, client+"-"+strings.TrimSuffix(filepath.Base(g), ".golden")+ext)
		write(t, path, src)
		paths = append(paths, path)
	}
	return paths
}

// TestJavaReadsTheProperties loads the java, spring and quarkus outputs with Java's own
// properties reader: PEM given by value keeps its line breaks and a password its quotes and
// backslashes, which the JAAS line escapes once more.
func TestJavaReadsTheProperties(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java is not installed")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "ReadProperties.java"), readProperties)
	var files []string
	files = append(files, goldenFiles(t, "java", "client.properties", ".properties", dir)...)
	files = append(files, goldenFiles(t, "spring", "application.properties", ".properties", dir)...)
	files = append(files, goldenFiles(t, "quarkus", "application.properties", ".properties", dir)...)
	out, err := exec.Command("java", append([]string{filepath.Join(dir, "ReadProperties.java")}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("unexpected line %q", line)
		}
		got[filepath.Base(f[0])+" "+f[1]] = f[2]
	}
	want := map[string]string{
		"java-mtls.properties ssl.keystore.key":                                  `-----BEGIN PRIVATE KEY-----\nMIIEkey\n-----END PRIVATE KEY-----`,
		"java-mtls.properties ssl.keystore.certificate.chain":                    `-----BEGIN CERTIFICATE-----\nMIIBclient\n-----END CERTIFICATE-----`,
		"spring-mtls.properties spring.kafka.properties.ssl.keystore.key":        `-----BEGIN PRIVATE KEY-----\nMIIEkey\n-----END PRIVATE KEY-----`,
		"quarkus-mtls.properties kafka.ssl.keystore.key":                         `-----BEGIN PRIVATE KEY-----\nMIIEkey\n-----END PRIVATE KEY-----`,
		"java-sasl-ssl-scram.properties sasl.jaas.config":                        `org.apache.kafka.common.security.scram.ScramLoginModule required username="barista" password="pa\"ss\\word";`,
		"java-sasl-ssl-scram.properties bootstrap.servers":                       "bootstrap.kafka.example.com:9092,broker-0.kafka.example.com:9092",
		"spring-sasl-ssl-scram.properties spring.kafka.bootstrap-servers":        "bootstrap.kafka.example.com:9092,broker-0.kafka.example.com:9092",
		"quarkus-oauthbearer.properties kafka.sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		"java-mtls-pkcs12.properties ssl.keystore.location":                      "/config/keystore.p12",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: Java reads %q, want %q", k, got[k], v)
		}
	}
}

// TestNodeParsesTheKafkaJSConfig checks the kafkajs modules' syntax with node --check.
func TestNodeParsesTheKafkaJSConfig(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	for _, f := range goldenFiles(t, "kafkajs", "kafka-config.js", ".js", t.TempDir()) {
		if out, err := exec.Command("node", "--check", f).CombinedOutput(); err != nil {
			t.Errorf("node --check %s: %v\n%s", filepath.Base(f), err, out)
		}
	}
}
