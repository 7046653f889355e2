package kubelet

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	cases := map[string]struct{ in, want string }{
		"a defined variable is replaced":       {"x=$(A)", "x=1"},
		"an undefined variable stays":          {"$(C)/$(B)", "$(C)/two"},
		"a doubled dollar escapes a reference": {"$$(A)", "$(A)"},
		"an unclosed reference stays":          {"a$(B", "a$(B"},
		"a lone dollar stays":                  {"cost $5 $", "cost $5 $"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := expand(tc.in, vars); got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRewriteArg(t *testing.T) {
	mounts := []Mount{
		{MountPath: "/etc/app/sub", Local: "/w/sub"},
		{MountPath: "/etc/app", Local: "/w/app"},
		{MountPath: "/etc/one.conf", Local: "/w/snap/one.conf"},
	}
	sortMounts(mounts)
	cases := map[string]struct{ in, want string }{
		"a path inside a mount":                 {"/etc/app/config.yaml", "/w/app/config.yaml"},
		"a nested mount wins over its parent":   {"/etc/app/sub/x", "/w/sub/x"},
		"the value of a --flag=value":           {"--config=/etc/app/c.yaml", "--config=/w/app/c.yaml"},
		"a file mount itself":                   {"/etc/one.conf", "/w/snap/one.conf"},
		"a sibling sharing a prefix is no path": {"/etc/apple/x", "/etc/apple/x"},
		"a plain flag is left alone":            {"--verbose", "--verbose"},
		"a key=value that is not a flag":        {"path=/etc/app/x", "path=/etc/app/x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := rewriteArg(tc.in, mounts); got != tc.want {
				t.Errorf("rewriteArg(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestContainerArgs(t *testing.T) {
	c := &corev1.Container{
		Command: []string{"/kafkalink-proxy", "--from-command"},
		Args:    []string{"--config=/opt/config/proxy.yaml", "--name=$(POD)", "positional"},
	}
	env := []corev1.EnvVar{{Name: "POD", Value: "p-1"}}
	mounts := []Mount{{MountPath: "/opt/config", Local: "/w/config"}, {MountPath: "/opt/config/tls/", Local: "/w/tls"}}
	sortMounts(mounts)
	cases := map[string]struct {
		remapFlag string
		keepArgs  bool
		want      []string
	}{
		"remaps first, then command and args with paths rewritten": {
			remapFlag: "--remap-path",
			want: []string{"--remap-path", "/opt/config/tls=/w/tls", "--remap-path", "/opt/config=/w/config",
				"--from-command", "--config=/w/config/proxy.yaml", "--name=p-1", "positional"},
		},
		"args kept verbatim but for variables": {
			remapFlag: "--remap-path", keepArgs: true,
			want: []string{"--remap-path", "/opt/config/tls=/w/tls", "--remap-path", "/opt/config=/w/config",
				"--from-command", "--config=/opt/config/proxy.yaml", "--name=p-1", "positional"},
		},
		"no remap flag": {
			want: []string{"--from-command", "--config=/w/config/proxy.yaml", "--name=p-1", "positional"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := containerArgs(c, env, mounts, tc.remapFlag, tc.keepArgs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestContainerEnv(t *testing.T) {
	pod := podInfo{name: "web-abc-local", namespace: "ns", labels: map[string]string{"app": "web"}}
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	cases := map[string]struct {
		container   corev1.Container
		want        []corev1.EnvVar
		wantWaiting bool
	}{
		"values, references and fields resolve, later entries override envFrom": {
			container: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("creds")}}},
				Env: []corev1.EnvVar{
					{Name: "S_user", Value: "override"},
					{Name: "GREETING", Value: "hi $(S_user)"},
					{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("creds"), Key: "password"}}},
					{Name: "CONF", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("settings"), Key: "app.yaml"}}},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				},
			},
			want: []corev1.EnvVar{
				{Name: "S_password", Value: "s3cret"}, {Name: "S_user", Value: "override"},
				{Name: "GREETING", Value: "hi override"}, {Name: "PASS", Value: "s3cret"}, {Name: "CONF", Value: "a: 1"},
				{Name: "POD_NAME", Value: "web-abc-local"}, {Name: "POD_NS", Value: "ns"}, {Name: "APP", Value: "web"},
			},
		},
		"a missing key keeps the container waiting": {
			container: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("creds"), Key: "nope"}}}}},
			wantWaiting: true,
		},
		"a missing optional key is left out": {
			container: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("creds"), Key: "nope", Optional: ptr.To(true)}}}}},
		},
		"a missing Secret keeps the container waiting": {
			container:   corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("absent")}}}},
			wantWaiting: true,
		},
	}
	o := fixtureObjects(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := containerEnv(o, pod, &tc.container)
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
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestLinePrefixerWritesWholeLines(t *testing.T) {
	var out strings.Builder
	l := &linePrefixer{w: &out, prefix: "ns/p: "}
	for _, chunk := range []string{"one\ntw", "o\n", "three"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "ns/p: one\nns/p: two\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
