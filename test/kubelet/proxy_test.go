package kubelet_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// TestRunnerRunsTheProxyInTheGatewaysLayout runs the real kafkalink-proxy from a Deployment
// laid out as the gateway controller writes it (config ConfigMap, listener key pair Secret
// under the reserved path, --config, readiness on the named management port), and rotates
// the certificate: the proxy serves the new one without a restart.
func TestRunnerRunsTheProxyInTheGatewaysLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	logger, ctx := ktesting.NewTestContext(t)
	// kube-controller-manager runs, without the controllers that would own Deployment status,
	// as the end-to-end tests run it: this checks the flag the runner needs. With "*" the
	// deployment controller and the runner overwrite each other's status many times a second.
	cp, err := framework.Start(ctx, framework.Options{Controllers: "*,-deployment,-replicaset", StrimziVersion: "none", Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	binary, err := framework.BuildBinary("./cmd/kafkalink-proxy", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runner, err := kubelet.New(kubelet.Options{
		Client:  cp.Client,
		Images:  map[string]string{"ghcr.io/kafkalink/kafkalink-proxy:dev": binary},
		WorkDir: t.TempDir(),
		Logger:  &logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- runner.Run(runCtx) }()
	t.Cleanup(func() {
		stopRunner()
		select {
		case <-runDone:
		case <-time.After(30 * time.Second):
			t.Error("the runner did not stop within 30s")
		}
	})
	e := &env{t: t, ctx: ctx, client: cp.Client, runner: runner}

	// The paths of pkg/gateway (ConfigDir, ConfigKey, ListenerSecretsDir), written out so this
	// test does not build the API packages.
	const configDir, configKey = "/opt/kafkalink/config", "proxy-config.yaml"
	const secretDir = "/opt/kroxylicious/secrets/tls/tls/gw-tls"
	listenPort, mgmtPort := freePort(t), freePort(t)
	config := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  bindAddress: 127.0.0.1
  keyPairs: [{certificateFile: %s/tls.crt, privateKeyFile: %s/tls.key}]
virtualClusters:
- {name: p, listener: tls, bootstrapHost: p-bootstrap.test, brokerPattern: p-broker-$(nodeId).test, targetBootstrap: "127.0.0.1:1"}
management: {port: %d, bindAddress: 127.0.0.1}
`, listenPort, secretDir, secretDir, mgmtPort)
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-config"},
		Data: map[string]string{configKey: config}})
	e.create(tlsSecret(t, 1))
	labels := map[string]string{"app": "gw"}
	e.create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), // played by one process
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "proxy",
						Image: "ghcr.io/kafkalink/kafkalink-proxy:dev",
						Args:  []string{"--config=" + configDir + "/" + configKey},
						Ports: []corev1.ContainerPort{{ContainerPort: int32(listenPort)}, {Name: "management", ContainerPort: int32(mgmtPort)}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("management")}}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: configDir, ReadOnly: true},
							{Name: "secret-gw-tls", MountPath: secretDir, ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "gw-config"}}}},
						{Name: "secret-gw-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: "gw-tls", DefaultMode: ptr.To[int32](0o440)}}},
					},
				},
			},
		},
	})

	d := e.waitAvailable("gw", corev1.ConditionTrue)
	if d.Status.AvailableReplicas != 1 || d.Status.Replicas != 1 {
		t.Errorf("status %+v, want one available replica standing in for two", d.Status)
	}
	pid := e.pod("gw").PID
	if got := servedSerial(t, listenPort); got != 1 {
		t.Fatalf("the proxy serves certificate serial %d, want 1", got)
	}

	e.update(func(c kubernetes.Interface) error {
		s, err := c.CoreV1().Secrets(ns).Get(ctx, "gw-tls", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data = tlsSecret(t, 2).Data
		_, err = c.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	e.eventually("the rotated certificate served", func() (bool, string) {
		got := servedSerial(t, listenPort)
		return got == 2, strconv.Itoa(got)
	})
	if p := e.pod("gw"); p.PID != pid {
		t.Errorf("the proxy restarted for a certificate rotation: pid %d, was %d", p.PID, pid)
	}
}

// tlsSecret is a kubernetes.io/tls Secret "gw-tls" with a self-signed certificate for *.test.
func tlsSecret(t *testing.T, serial int64) *corev1.Secret {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), DNSNames: []string{"*.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-tls"},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
		},
	}
}

// servedSerial is the serial number of the certificate the proxy presents for the bootstrap
// host, or 0 when the handshake fails.
func servedSerial(t *testing.T, port int) int {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", "127.0.0.1:"+strconv.Itoa(port),
		&tls.Config{ServerName: "p-bootstrap.test", InsecureSkipVerify: true}) //nolint:gosec // only the serial matters
	if err != nil {
		return 0
	}
	defer conn.Close()
	return int(conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64())
}
