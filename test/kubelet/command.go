package kubelet

import (
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podInfo is what the downward API and fieldRef env vars can read of the pod the runner plays.
type podInfo struct {
	name, namespace, uid, serviceAccount string
	labels, annotations                  map[string]string
}

// fieldValue resolves a fieldRef the way the kubelet does, with the local machine as node and
// loopback as pod and host IP.
func (p podInfo) fieldValue(fieldPath string) (string, error) {
	switch fieldPath {
	case "metadata.name":
		return p.name, nil
	case "metadata.namespace":
		return p.namespace, nil
	case "metadata.uid":
		return p.uid, nil
	case "spec.nodeName":
		return "localhost", nil
	case "spec.serviceAccountName":
		return p.serviceAccount, nil
	case "status.podIP", "status.hostIP", "status.podIPs", "status.hostIPs":
		return "127.0.0.1", nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": p.labels, "metadata.annotations": p.annotations} {
		if rest, ok := strings.CutPrefix(fieldPath, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m[key], nil
			}
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported", fieldPath)
}

// containerEnv resolves a container's environment: envFrom first, then env, each value
// expanded with $(VAR) from the variables before it, as the kubelet does. A missing
// non-optional Secret, ConfigMap or key is a waitingError (the kubelet's
// CreateContainerConfigError).
func containerEnv(o objects, pod podInfo, c *corev1.Container) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	vars := map[string]string{}
	set := func(name, value string) {
		if _, ok := vars[name]; ok {
			for i := range out {
				if out[i].Name == name {
					out[i].Value = value
				}
			}
		} else {
			out = append(out, corev1.EnvVar{Name: name, Value: value})
		}
		vars[name] = value
	}
	for _, from := range c.EnvFrom {
		var data map[string][]byte
		var err error
		switch {
		case from.SecretRef != nil:
			data, _, err = o.secretData(from.SecretRef.Name, from.SecretRef.Optional)
		case from.ConfigMapRef != nil:
			data, _, err = o.configMapData(from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		}
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, string(data[k]))
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vars))
			continue
		}
		var value string
		switch vf := e.ValueFrom; {
		case vf.SecretKeyRef != nil:
			data, found, err := o.secretData(vf.SecretKeyRef.Name, vf.SecretKeyRef.Optional)
			if err != nil {
				return nil, err
			}
			v, ok := data[vf.SecretKeyRef.Key]
			if !ok {
				if found && (vf.SecretKeyRef.Optional == nil || !*vf.SecretKeyRef.Optional) {
					return nil, waiting("secret %s/%s has no key %q", o.namespace, vf.SecretKeyRef.Name, vf.SecretKeyRef.Key)
				}
				continue
			}
			value = string(v)
		case vf.ConfigMapKeyRef != nil:
			data, found, err := o.configMapData(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Optional)
			if err != nil {
				return nil, err
			}
			v, ok := data[vf.ConfigMapKeyRef.Key]
			if !ok {
				if found && (vf.ConfigMapKeyRef.Optional == nil || !*vf.ConfigMapKeyRef.Optional) {
					return nil, waiting("configmap %s/%s has no key %q", o.namespace, vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key)
				}
				continue
			}
			value = string(v)
		case vf.FieldRef != nil:
			v, err := pod.fieldValue(vf.FieldRef.FieldPath)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			value = v
		default:
			return nil, fmt.Errorf("env %s: only secretKeyRef, configMapKeyRef and fieldRef are supported", e.Name)
		}
		set(e.Name, value)
	}
	return out, nil
}

// expand replaces $(VAR) with the value of VAR when it is defined and $$ with $, leaving
// anything else as written, which is the kubelet's rule for command, args and env values.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// Mount is a container path and the local path that stands for it.
type Mount struct {
	// MountPath is the path in the container.
	MountPath string
	// Local is the local file or folder.
	Local string
}

// sortMounts orders mounts longest container path first, so a prefix remapper that applies
// remaps in order maps a nested mount (or /a/bc next to /a/b) before the shorter path can
// claim it.
func sortMounts(mounts []Mount) {
	sort.SliceStable(mounts, func(i, j int) bool {
		if len(mounts[i].MountPath) != len(mounts[j].MountPath) {
			return len(mounts[i].MountPath) > len(mounts[j].MountPath)
		}
		return mounts[i].MountPath < mounts[j].MountPath
	})
}

// rewritePath maps a container path inside a mount to its local path; ok is false when no
// mount contains it. Matching respects path boundaries: /etc/app does not contain /etc/apple.
func rewritePath(p string, mounts []Mount) (string, bool) {
	for _, m := range mounts {
		mp := path.Clean(m.MountPath)
		if p == mp {
			return m.Local, true
		}
		if rest, ok := strings.CutPrefix(p, mp+"/"); ok {
			return m.Local + "/" + rest, true
		}
	}
	return p, false
}

// rewriteArg rewrites a container path in an argument, either the whole argument or the value
// of a --flag=value argument.
func rewriteArg(arg string, mounts []Mount) string {
	if local, ok := rewritePath(arg, mounts); ok {
		return local
	}
	if name, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(name, "-") {
		if local, ok := rewritePath(value, mounts); ok {
			return name + "=" + local
		}
	}
	return arg
}

// containerArgs builds the argument list of the local process: one remap flag per mount
// (first, because Go's flag package stops at the first positional argument), then command[1:]
// (command[0] stands for the image's entrypoint, which is the mapped binary) and args, with
// $(VAR) expanded and, unless keepArgs, container paths inside mounts rewritten to local paths.
func containerArgs(c *corev1.Container, env []corev1.EnvVar, mounts []Mount, remapFlag string, keepArgs bool) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	var out []string
	if remapFlag != "" {
		for _, m := range mounts {
			out = append(out, remapFlag, path.Clean(m.MountPath)+"="+m.Local)
		}
	}
	var given []string
	if len(c.Command) > 1 {
		given = append(given, c.Command[1:]...)
	}
	given = append(given, c.Args...)
	for _, a := range given {
		a = expand(a, vars)
		if !keepArgs {
			a = rewriteArg(a, mounts)
		}
		out = append(out, a)
	}
	return out
}
