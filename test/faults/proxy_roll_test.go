package faults_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kafkalink/kafkalink/internal/freeport"
	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

const (
	pxNamespace = "faults-proxy-roll"
	pxImage     = "ghcr.io/kafkalink/kafkalink-proxy:dev"
	// pxConfigDir and pxSecretDir are pkg/gateway's ConfigDir and listener secret layout,
	// written out so this test does not build the API packages.
	pxConfigDir, pxConfigKey = "/opt/kafkalink/config", "proxy-config.yaml"
	pxSecretDir              = "/opt/kroxylicious/secrets/tls/tls/gw-tls"
	// pxChecksum is the pod template annotation a configuration change bumps, as the gateway
	// controller's checksum of config and Secrets does, so the pods roll.
	pxChecksum = "kafkalink.io/config-checksum"
)

// pxReplica is one proxy replica: its Deployment, ConfigMap and ports.
type pxReplica struct {
	name             string
	port, mgmt, lbPt int
	target           string
}

func (r pxReplica) config(idle string) string {
	return fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  bindAddress: 127.0.0.1
  keyPairs: [{certificateFile: %s/tls.crt, privateKeyFile: %s/tls.key}]
virtualClusters:
- {name: a, listener: tls, bootstrapHost: a-bootstrap.kafka.test, brokerPattern: a-broker-$(nodeId).kafka.test, targetBootstrap: %q, advertisedPort: %d}
management: {port: %d, bindAddress: 127.0.0.1}
limits: {drainTimeout: 5s, idleTimeout: %s}
`, r.port, pxSecretDir, pxSecretDir, r.target, r.lbPt, r.mgmt, idle)
}

func (r pxReplica) deployment(checksum string) *appsv1.Deployment {
	labels := map[string]string{"app": r.name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: pxNamespace, Name: r.name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{pxChecksum: checksum}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](15),
					Containers: []corev1.Container{{
						Name:  "proxy",
						Image: pxImage,
						Args:  []string{"--config=" + pxConfigDir + "/" + pxConfigKey},
						Ports: []corev1.ContainerPort{{ContainerPort: int32(r.port)}, {Name: "management", ContainerPort: int32(r.mgmt)}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("management")}}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: pxConfigDir, ReadOnly: true},
							{Name: "secret-gw-tls", MountPath: pxSecretDir, ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: r.name + "-config"}}}},
						{Name: "secret-gw-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "gw-tls"}}},
					},
				},
			},
		},
	}
}

// TestProxyRollingUpdateUnderLoad rolls three proxy replicas, one after another, while an
// idempotent franz-go producer (acks=all) and a consumer group run through them: each replica's
// configuration changes and its pod template's checksum annotation with it, so the test kubelet
// stops the old process (SIGTERM: it drains) and starts the new one, and the next replica rolls
// once this one is ready and every partition has taken records produced since. Nothing is lost
// or written twice, no record fails, and the consumer reports no error it does not retry.
//
// The test kubelet plays a Deployment as one process (it watches Deployments, not pods), so the
// three replicas are three one-replica Deployments, and a loopback balancer over their ports
// stands in for the Service (it skips a replica that refuses the dial, as kube-proxy skips a pod
// that is not ready). One replica is down at a time while its successor starts: the order of a
// rolling update with maxSurge 0 and maxUnavailable 1, which is harder on clients than what the
// gateway's Deployment gets (the default strategy, 25 % and 25 %, is maxSurge 1 and
// maxUnavailable 0 for three replicas).
func TestProxyRollingUpdateUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	const topic, partitions, replicas = "roll", 3, 3
	began := time.Now()
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cp, err := framework.Start(ctx, framework.Options{WithoutControllerManager: true, WithoutGatewayAPI: true, StrimziVersion: "none", Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	binary, err := framework.BuildBinary("./cmd/kafkalink-proxy", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runner, err := kubelet.New(kubelet.Options{Client: cp.Client, Namespace: pxNamespace, Images: map[string]string{pxImage: binary},
		WorkDir: t.TempDir(), Logger: &logger, StopTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- runner.Run(runCtx) }()
	t.Cleanup(func() { stopRunner(); <-runDone })

	kc, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	certPEM, keyPEM, roots := pxSelfSigned(t)
	reps := make([]pxReplica, replicas)
	backends := make([]string, replicas)
	for i := range reps {
		reps[i] = pxReplica{name: "gw-" + strconv.Itoa(i), port: freeport.Port(), mgmt: freeport.Port(), target: kc.ListenAddrs()[0]}
		backends[i] = "127.0.0.1:" + strconv.Itoa(reps[i].port)
	}
	lb := pxStartBalancer(t, backends)

	c := cp.Client
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pxNamespace}}, metav1.CreateOptions{})
	must(err)
	_, err = c.CoreV1().Secrets(pxNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gw-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}}, metav1.CreateOptions{})
	must(err)
	for i := range reps {
		reps[i].lbPt = lb.port()
		_, err = c.CoreV1().ConfigMaps(pxNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: reps[i].name + "-config"},
			Data: map[string]string{pxConfigKey: reps[i].config("10m")}}, metav1.CreateOptions{})
		must(err)
		_, err = c.AppsV1().Deployments(pxNamespace).Create(ctx, reps[i].deployment("v1"), metav1.CreateOptions{})
		must(err)
	}
	// ready waits until the replica runs the pod template with checksum and is ready; it
	// returns the process id.
	ready := func(r pxReplica, checksum string, notPID int) int {
		t.Helper()
		// The hash of the template as the API server stored it, defaults filled in.
		d, err := c.AppsV1().Deployments(pxNamespace).Get(ctx, r.name, metav1.GetOptions{})
		must(err)
		if d.Spec.Template.Annotations[pxChecksum] != checksum {
			t.Fatalf("%s has checksum %q, want %q", r.name, d.Spec.Template.Annotations[pxChecksum], checksum)
		}
		hash := kubelet.TemplateHash(&d.Spec.Template)
		var pid int
		pxWait(ctx, t, r.name+" ready with checksum "+checksum, func() bool {
			p, ok := runner.Pod(pxNamespace, r.name)
			pid = p.PID
			return ok && p.Ready && p.PID != 0 && p.PID != notPID && p.TemplateHash == hash
		})
		return pid
	}
	pids := make([]int, replicas)
	for i, r := range reps {
		pids[i] = ready(r, "v1", 0)
	}

	producer, err := kgo.NewClient(append(pxClientOpts(lb.port(), roots), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	must(err)
	defer producer.Close()
	consumer, err := kgo.NewClient(append(pxClientOpts(lb.port(), roots), kgo.ConsumerGroup("roll-group"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))...)
	must(err)
	defer consumer.Close()
	seqs := newPxSequences()
	stop := make(chan struct{})
	produced := make(chan int, 1)
	go func() { produced <- pxProduce(ctx, producer, seqs, 16<<10, stop) }()
	cctx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	consumed := make(chan error, 1)
	go func() { consumed <- pxConsume(cctx, consumer, seqs) }()
	progress := func(step string, since time.Time) {
		t.Helper()
		pxWait(ctx, t, step+": every partition acknowledging records produced since", func() bool { return seqs.ackedAfter(since, partitions) })
	}
	progress("before the roll", time.Now())

	rollStart := time.Now()
	for i, r := range reps {
		cm, err := c.CoreV1().ConfigMaps(pxNamespace).Get(ctx, r.name+"-config", metav1.GetOptions{})
		must(err)
		cm.Data[pxConfigKey] = r.config("9m")
		_, err = c.CoreV1().ConfigMaps(pxNamespace).Update(ctx, cm, metav1.UpdateOptions{})
		must(err)
		d, err := c.AppsV1().Deployments(pxNamespace).Get(ctx, r.name, metav1.GetOptions{})
		must(err)
		d.Spec.Template.Annotations[pxChecksum] = "v2"
		_, err = c.AppsV1().Deployments(pxNamespace).Update(ctx, d, metav1.UpdateOptions{})
		must(err)
		pids[i] = ready(r, "v2", pids[i])
		progress(r.name+" rolled", time.Now())
	}
	rolled := time.Since(rollStart)
	close(stop)
	n := <-produced

	pxWait(ctx, t, "the consumer to read every record", func() bool {
		select {
		case err := <-consumed:
			t.Fatalf("consumer stopped with %d of %d records read: %v", seqs.readCount(), n, err)
		default:
		}
		return seqs.readCount() >= n
	})
	stopConsumer()
	must(<-consumed)
	seqs.mu.Lock()
	defer seqs.mu.Unlock()
	if seqs.failed != 0 || seqs.duplicates != 0 || len(seqs.seen) != n {
		t.Fatalf("%d records failed to produce (%v), %d written twice, %d of %d read", seqs.failed, seqs.failures, seqs.duplicates, len(seqs.seen), n)
	}
	fmt.Printf("proxy rolling update | %d proxy replicas rolled one at a time under an idempotent producer (acks=all) and a consumer group, %d records of 16 KiB | lost: 0, duplicated: 0, failed: 0 (consumer redeliveries %d, errors the consumer reported and retried %d %q, dials the balancer found refused %d) | roll %v, longest stall %v; test wall time %v\n",
		replicas, n, seqs.redelivered, len(seqs.clientErrors), seqs.clientErrors[:min(2, len(seqs.clientErrors))], lb.refused.Load(),
		rolled.Round(time.Millisecond), seqs.stall.Round(time.Millisecond), time.Since(began).Round(time.Second))
}
