package binding_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"

	"github.com/kafkalink/kafkalink/test/framework"
)

// schemalessCRD is the cheapest custom resource a status can be written to: a status
// subresource and no schema beyond "keep what is sent" (no structural fields, no defaults, no
// CEL). Its status write is the floor under any status write, whatever the KafkaConnection's
// schema: what is left is the API server's handling of a JSON custom resource.
const schemalessCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: floors.bench.kafkalink.io
spec:
  group: bench.kafkalink.io
  names: {kind: Floor, listKind: FloorList, plural: floors, singular: floor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

var floorResource = schema.GroupVersionResource{Group: "bench.kafkalink.io", Version: "v1", Resource: "floors"}

// installFloor returns a function that installs schemalessCRD on cp the first time it is
// called, with an informer on it (until stop) as the operator has on its kinds, and returns a
// client for it.
func installFloor(cp *framework.ControlPlane, stop <-chan struct{}) func() (dynamic.Interface, error) {
	return sync.OnceValues(func() (dynamic.Interface, error) {
		file := filepath.Join(os.TempDir(), "kafkalink-bench-floors-crd.yaml")
		if err := os.WriteFile(file, []byte(schemalessCRD), 0o600); err != nil {
			return nil, err
		}
		defer os.Remove(file)
		if err := cp.InstallCRDFiles(context.Background(), file); err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfig(cp.Config)
		if err != nil {
			return nil, err
		}
		f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
		_ = f.ForResource(floorResource).Informer()
		f.Start(stop)
		return dyn, nil
	})
}

// floorForms are the write forms against schemalessCRD.
func floorForms() []writeForm {
	return []writeForm{{
		name: "status: merge patch with resourceVersion, a custom resource without a schema (the floor)",
		setup: func(w *formWriter, i int) error {
			dyn, err := w.floor()
			if err != nil {
				return err
			}
			// The spec a KafkaConnection of the bench has, as plain JSON.
			spec, err := toMap(connection(w.ns, w.name(i), "big", "user", "", "").Spec)
			if err != nil {
				return err
			}
			o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.kafkalink.io/v1", "kind": "Floor",
				"metadata": map[string]any{"name": w.name(i), "namespace": w.ns}, "spec": spec}}
			created, err := dyn.Resource(floorResource).Namespace(w.ns).Create(w.ctx, o, metav1.CreateOptions{})
			if err == nil {
				w.rv[i] = created.GetResourceVersion()
			}
			return err
		},
		write: func(w *formWriter, i int) error {
			dyn, err := w.floor()
			if err != nil {
				return err
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": w.rv[i]}, "status": w.status(i)})
			_, err = dyn.Resource(floorResource).Namespace(w.ns).Patch(w.ctx, w.name(i), types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: "kafkalink"}, "status")
			return err
		},
	}}
}

func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}
