package logging

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// childEnv makes the test binary act as a command with the logging flags: the logging
// configuration is process-global and applied once, so each format runs in its own process.
const childEnv = "KAFKALINK_LOGGING_TEST_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childEnv); ok {
		os.Exit(child(strings.Fields(args)))
	}
	os.Exit(m.Run())
}

// child parses args like a binary's main, applies them and logs one line at V(0) and one at V(2).
func child(args []string) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	c := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := Apply(c); err != nil {
		fmt.Fprintln(os.Stderr, "apply:", err)
		return 3
	}
	logger := klog.Background().WithName("test")
	logger.Info("Hello", "virtualCluster", "vc-a")
	logger.V(2).Info("Detail", "nodeId", 3)
	klog.Flush()
	return 0
}

func run(t *testing.T, args string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+args)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err := cmd.Run()
	return stderr.String(), err
}

func TestJSONFormatWritesOneJSONObjectALine(t *testing.T) {
	out, err := run(t, "--logging-format=json -v=2")
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("line is not JSON: %q: %v", line, err)
		}
		msg, _ := entry["msg"].(string)
		msgs = append(msgs, msg)
		if msg == "Hello" && entry["virtualCluster"] != "vc-a" {
			t.Errorf("key/value pair lost: %v", entry)
		}
		if msg == "Detail" && entry["v"] != float64(2) {
			t.Errorf("verbosity not recorded: %v", entry)
		}
	}
	if strings.Join(msgs, ",") != "Hello,Detail" {
		t.Errorf("messages = %q, want Hello then Detail (-v=2 enables the second)", msgs)
	}
}

func TestTextIsTheDefaultAndHonoursVerbosity(t *testing.T) {
	out, err := run(t, "")
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, `] "Hello" logger="test" virtualCluster="vc-a"`) {
		t.Errorf("no klog text line for Hello: %q", out)
	}
	if strings.Contains(out, "Detail") {
		t.Errorf("V(2) line logged at the default verbosity: %q", out)
	}
	if json.Valid([]byte(strings.TrimSpace(out))) {
		t.Errorf("default format wrote JSON: %q", out)
	}
}

func TestUnknownFormatIsRefusedWithThePermittedOnes(t *testing.T) {
	out, err := run(t, "--logging-format=yaml")
	if err == nil {
		t.Fatalf("child accepted --logging-format=yaml: %s", out)
	}
	if !strings.Contains(out, "yaml") {
		t.Errorf("error does not name the bad value: %s", out)
	}
	for _, f := range Formats {
		if !strings.Contains(out, f) {
			t.Errorf("error does not name format %q: %s", f, out)
		}
	}
}
