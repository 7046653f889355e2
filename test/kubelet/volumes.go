package kubelet

import (
	"fmt"
	"io/fs"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// defaultVolumeMode is the API's default defaultMode (0644) for Secret, ConfigMap and
// projected volumes.
const defaultVolumeMode fs.FileMode = 0o644

// volumeKind says how the runner provides a volume.
type volumeKind int

const (
	// kindAtomic volumes (Secret, ConfigMap, projected) are written by WriteAtomic and kept
	// up to date while the process runs.
	kindAtomic volumeKind = iota
	// kindEmptyDir is an empty folder that lives as long as the pod.
	kindEmptyDir
	// kindHostPath is the host path itself: on the local machine the host is the node.
	kindHostPath
	// kindUnsupported volumes become an empty folder, with a log line.
	kindUnsupported
)

func kindOf(v *corev1.Volume) volumeKind {
	switch {
	case v.Secret != nil, v.ConfigMap != nil, v.Projected != nil:
		return kindAtomic
	case v.EmptyDir != nil:
		return kindEmptyDir
	case v.HostPath != nil:
		return kindHostPath
	}
	return kindUnsupported
}

// waitingError is a reason the pod cannot start yet that an informer event will clear, such
// as a missing Secret: the kubelet keeps such a pod in ContainerCreating, and so do we, without
// a retry loop.
type waitingError struct{ msg string }

func (e *waitingError) Error() string { return e.msg }

func waiting(format string, args ...any) error {
	return &waitingError{msg: fmt.Sprintf(format, args...)}
}

// objects reads a namespace's Secrets and ConfigMaps from informer caches.
type objects struct {
	namespace  string
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
}

// secretData returns a Secret's data; nil and no error when it is missing and optional.
func (o objects) secretData(name string, optional *bool) (map[string][]byte, bool, error) {
	s, err := o.secrets.Secrets(o.namespace).Get(name)
	if apierrors.IsNotFound(err) {
		if optional != nil && *optional {
			return nil, false, nil
		}
		return nil, false, waiting("secret %s/%s not found", o.namespace, name)
	}
	if err != nil {
		return nil, false, err
	}
	return s.Data, true, nil
}

// configMapData returns a ConfigMap's data and binary data as bytes.
func (o objects) configMapData(name string, optional *bool) (map[string][]byte, bool, error) {
	cm, err := o.configMaps.ConfigMaps(o.namespace).Get(name)
	if apierrors.IsNotFound(err) {
		if optional != nil && *optional {
			return nil, false, nil
		}
		return nil, false, waiting("configmap %s/%s not found", o.namespace, name)
	}
	if err != nil {
		return nil, false, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, true, nil
}

// project adds an object's keys to payload: every key under its own name, or only the items
// with their paths and modes. A missing item key is an error unless the source is optional.
func project(payload Payload, what string, data map[string][]byte, items []corev1.KeyToPath, mode fs.FileMode, optional *bool) error {
	if len(items) == 0 {
		for k, v := range data {
			payload[k] = File{Data: v, Mode: mode}
		}
		return nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return waiting("%s has no key %q", what, item.Key)
		}
		m := mode
		if item.Mode != nil {
			m = fs.FileMode(*item.Mode)
		}
		payload[item.Path] = File{Data: v, Mode: m}
	}
	return nil
}

func modeOr(mode *int32) fs.FileMode {
	if mode == nil {
		return defaultVolumeMode
	}
	return fs.FileMode(*mode)
}

// volumePayload computes the files of a Secret, ConfigMap or projected volume. skipped names
// projected sources the runner cannot provide (downward API, service account tokens, trust
// bundles, pod certificates), which the caller logs.
func volumePayload(o objects, v *corev1.Volume) (payload Payload, skipped []string, err error) {
	payload = Payload{}
	switch {
	case v.Secret != nil:
		s := v.Secret
		data, _, err := o.secretData(s.SecretName, s.Optional)
		if err != nil {
			return nil, nil, err
		}
		err = project(payload, "secret "+o.namespace+"/"+s.SecretName, data, s.Items, modeOr(s.DefaultMode), s.Optional)
		return payload, nil, err
	case v.ConfigMap != nil:
		c := v.ConfigMap
		data, _, err := o.configMapData(c.Name, c.Optional)
		if err != nil {
			return nil, nil, err
		}
		err = project(payload, "configmap "+o.namespace+"/"+c.Name, data, c.Items, modeOr(c.DefaultMode), c.Optional)
		return payload, nil, err
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode)
		for i, src := range v.Projected.Sources {
			switch {
			case src.Secret != nil:
				s := src.Secret
				data, _, err := o.secretData(s.Name, s.Optional)
				if err != nil {
					return nil, nil, err
				}
				if err := project(payload, "secret "+o.namespace+"/"+s.Name, data, s.Items, mode, s.Optional); err != nil {
					return nil, nil, err
				}
			case src.ConfigMap != nil:
				c := src.ConfigMap
				data, _, err := o.configMapData(c.Name, c.Optional)
				if err != nil {
					return nil, nil, err
				}
				if err := project(payload, "configmap "+o.namespace+"/"+c.Name, data, c.Items, mode, c.Optional); err != nil {
					return nil, nil, err
				}
			case src.DownwardAPI != nil:
				skipped = append(skipped, fmt.Sprintf("source %d (downwardAPI)", i))
			case src.ServiceAccountToken != nil:
				skipped = append(skipped, fmt.Sprintf("source %d (serviceAccountToken)", i))
			case src.ClusterTrustBundle != nil:
				skipped = append(skipped, fmt.Sprintf("source %d (clusterTrustBundle)", i))
			default:
				skipped = append(skipped, fmt.Sprintf("source %d (unsupported)", i))
			}
		}
		return payload, skipped, nil
	}
	return nil, nil, fmt.Errorf("volume %q is not a Secret, ConfigMap or projected volume", v.Name)
}

// referencedObjects lists the Secrets and ConfigMaps a pod template reads, as index keys
// "secret/<namespace>/<name>" and "configmap/<namespace>/<name>", so a change to one of them
// reaches the Deployments that use it.
func referencedObjects(namespace string, spec *corev1.PodSpec) []string {
	set := map[string]bool{}
	secret := func(name string) { set["secret/"+namespace+"/"+name] = true }
	configMap := func(name string) { set["configmap/"+namespace+"/"+name] = true }
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil:
			secret(v.Secret.SecretName)
		case v.ConfigMap != nil:
			configMap(v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					secret(src.Secret.Name)
				}
				if src.ConfigMap != nil {
					configMap(src.ConfigMap.Name)
				}
			}
		}
	}
	for _, c := range spec.Containers {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				secret(e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				configMap(e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				secret(e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				configMap(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
