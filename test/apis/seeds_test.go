package apis_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/test/framework"
)

// kubectl runs the control plane's kubectl against it, as a user would.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(cp.BinDir, "kubectl"), append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func ensureNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func seedFile(t *testing.T, name string) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "manifests", "examples", "seeds", name)
}

func TestSeedExamplesAreAcceptedAsWritten(t *testing.T) {
	ensureNamespaces(t, "my-namespace", "my-proxy", "kafka", "seeds")
	files, err := filepath.Glob(seedFile(t, "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("expected the extracted seed examples, found %d (%v)", len(files), err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		if name == "kafkagateway-field-template.yaml" {
			continue // a template, refused below
		}
		t.Run(name, func(t *testing.T) {
			// Scenarios share object names, so each one gets a clean slate.
			out, err := kubectl(t, "apply", "-f", file)
			if err != nil {
				t.Fatalf("kubectl apply -f %s refused it:\n%s", name, out)
			}
			if !strings.Contains(out, "created") && !strings.Contains(out, "configured") && !strings.Contains(out, "unchanged") {
				t.Fatalf("unexpected kubectl output:\n%s", out)
			}
			if out, err := kubectl(t, "delete", "--wait=false", "-f", file); err != nil {
				t.Fatalf("cleaning up: %s", out)
			}
		})
	}
}

func TestKafkaGatewayFieldTemplateIsRefusedForItsEmptyNames(t *testing.T) {
	ensureNamespaces(t, "seeds")
	out, err := kubectl(t, "apply", "--namespace", "seeds", "-f", seedFile(t, "kafkagateway-field-template.yaml"))
	if err == nil {
		t.Fatalf("the field template was accepted:\n%s", out)
	}
	for _, field := range []string{
		"spec.listeners[0].tls.certificateRefs[0].name",
		"spec.listeners[0].tls.frontendValidation.caCertificateRefs[0].name",
		"spec.backendTLS.clientCertificateRef.name",
	} {
		if !strings.Contains(out, field) {
			t.Errorf("refusal does not name %s:\n%s", field, out)
		}
	}
}

func TestSeedKafkaGatewayParametersMeansManagementSettings(t *testing.T) {
	ensureNamespaces(t, "seeds")
	out, err := kubectl(t, "apply", "--namespace", "seeds", "-f", seedFile(t, "kafkagatewayparameters.yaml"))
	if err != nil {
		t.Fatal(out)
	}
	out, err = kubectl(t, "get", "--namespace", "seeds", "kafkagatewayparameters", "my-params", "-o", "jsonpath={.spec.replicas} {.spec.port} {.spec.prometheusMetrics}")
	if err != nil || out != "3 8080 true" {
		t.Fatalf("stored spec %q (%v), want replicas, port and prometheusMetrics kept", out, err)
	}
}

// TestInstallBundleApplies applies manifests/install.yaml as a cluster admin would.
func TestInstallBundleApplies(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "install.yaml"))
	if err != nil {
		t.Fatalf("kubectl apply -f manifests/install.yaml: %v\n%s", err, out)
	}
	for _, want := range []string{"namespace/kafkalink-system", "serviceaccount/kafkalink-operator", "deployment.apps/kafkalink-operator"} {
		if !strings.Contains(out, want) {
			t.Errorf("install.yaml did not create %s:\n%s", want, out)
		}
	}
}

// TestStrimziExamplesAreAccepted applies manifests/examples/strimzi in order, as a user would, to
// an API server with Strimzi's (the real ones when ../shared has them), Gateway API's, the
// Service Binding runtime's and kafkalink's CRDs.
func TestStrimziExamplesAreAccepted(t *testing.T) {
	crds, err := framework.ServiceBindingCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.InstallCRDFiles(context.Background(), crds...); err != nil {
		t.Fatal(err)
	}
	ensureNamespaces(t, "kafka", "apps")
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "manifests", "examples", "strimzi", "*.yaml"))
	if err != nil || len(files) != 4 {
		t.Fatalf("expected the four Strimzi example files, found %v (%v)", files, err)
	}
	for _, file := range files {
		out, err := kubectl(t, "apply", "-f", file)
		if err != nil {
			t.Fatalf("kubectl apply -f %s refused it:\n%s", filepath.Base(file), out)
		}
		t.Logf("%s:\n%s", filepath.Base(file), out)
	}
	out, err := kubectl(t, "get", "--namespace", "apps", "kafkaroute", "my-cluster", "-o", "jsonpath={.spec.parentRefs[0].rules[0].backendRefs[0].kind}")
	if err != nil || out != "Kafka" {
		t.Errorf("the stored route's backend kind is %q (%v), want Kafka", out, err)
	}
}
