package kubelet

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// fixtureObjects serves a namespace "ns" with a Secret "creds" and a ConfigMap "settings".
func fixtureObjects(t *testing.T) objects {
	t.Helper()
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	configMaps := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	for _, obj := range []any{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
			Data: map[string][]byte{"user": []byte("alice"), "password": []byte("s3cret")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "creds"},
			Data: map[string][]byte{"user": []byte("mallory")}},
	} {
		if err := secrets.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := configMaps.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings"},
		Data: map[string]string{"app.yaml": "a: 1"}, BinaryData: map[string][]byte{"blob": {0, 1, 2}}}); err != nil {
		t.Fatal(err)
	}
	return objects{namespace: "ns", secrets: corelisters.NewSecretLister(secrets), configMaps: corelisters.NewConfigMapLister(configMaps)}
}

func TestVolumePayload(t *testing.T) {
	cases := map[string]struct {
		volume      corev1.VolumeSource
		want        Payload
		wantSkipped []string
		wantWaiting bool
	}{
		"a Secret volume holds every key with the default mode": {
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}},
			want:   Payload{"user": {[]byte("alice"), 0o644}, "password": {[]byte("s3cret"), 0o644}},
		},
		"a Secret volume with items holds only those, at their paths and modes": {
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o440),
				Items: []corev1.KeyToPath{{Key: "password", Path: "sasl/pass"}, {Key: "user", Path: "user.txt", Mode: ptr.To[int32](0o400)}}}},
			want: Payload{"sasl/pass": {[]byte("s3cret"), 0o440}, "user.txt": {[]byte("alice"), 0o400}},
		},
		"a ConfigMap volume holds data and binary data": {
			volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			want:   Payload{"app.yaml": {[]byte("a: 1"), 0o644}, "blob": {[]byte{0, 1, 2}, 0o644}},
		},
		"a projected volume merges its sources and skips what it cannot provide": {
			volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o600), Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Items: []corev1.KeyToPath{{Key: "user", Path: "u"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Items: []corev1.KeyToPath{{Key: "app.yaml", Path: "conf/app.yaml"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}},
			want:        Payload{"u": {[]byte("alice"), 0o600}, "conf/app.yaml": {[]byte("a: 1"), 0o600}},
			wantSkipped: []string{"source 2 (downwardAPI)", "source 3 (serviceAccountToken)"},
		},
		"a missing Secret keeps the pod waiting": {
			volume:      corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}},
			wantWaiting: true,
		},
		"a missing optional Secret is an empty volume": {
			volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: ptr.To(true)}},
			want:   Payload{},
		},
		"a missing item key keeps the pod waiting": {
			volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
				Items: []corev1.KeyToPath{{Key: "nope", Path: "nope"}}}},
			wantWaiting: true,
		},
		"a missing item key of an optional source is left out": {
			volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
				Optional: ptr.To(true), Items: []corev1.KeyToPath{{Key: "nope", Path: "nope"}, {Key: "app.yaml", Path: "a"}}}},
			want: Payload{"a": {[]byte("a: 1"), 0o644}},
		},
	}
	o := fixtureObjects(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, skipped, err := volumePayload(o, &corev1.Volume{Name: "v", VolumeSource: tc.volume})
			var w *waitingError
			if tc.wantWaiting {
				if !errors.As(err, &w) {
					t.Fatalf("want a waiting error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("payload\n got %v\nwant %v", got, tc.want)
			}
			if !reflect.DeepEqual(skipped, tc.wantSkipped) {
				t.Errorf("skipped %v, want %v", skipped, tc.wantSkipped)
			}
		})
	}
}

func TestReferencedObjectsCoverVolumesAndEnv(t *testing.T) {
	spec := &corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s1"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s2"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c1"}}},
			}}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
		Containers: []corev1.Container{{
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c2"}}}},
			Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}, Key: "k"}}}},
		}},
	}
	want := []string{"configmap/ns/c1", "configmap/ns/c2", "secret/ns/s1", "secret/ns/s2", "secret/ns/s3"}
	if got := referencedObjects("ns", spec); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestPayloadFingerprintSeesModes(t *testing.T) {
	a := Payload{"f": {Data: []byte("x"), Mode: 0o644}}
	b := Payload{"f": {Data: []byte("x"), Mode: fs.FileMode(0o600)}}
	if a.fingerprint() == b.fingerprint() {
		t.Error("a mode change does not change the fingerprint")
	}
}
