package framework

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddStretchFields adds the fields of Strimzi's stretch cluster proposal
// (../shared/seeds/strimzi-stretch-cluster.md) to the installed KafkaNodePool CRD:
// spec.target {clusterUrl, secret} and spec.crossClusterTechnology {technology, configuration
// {submarinerClusterId}}. No Strimzi release has them yet, and a released CRD's structural schema
// would prune them from every object. Everything else stays the released CRD's.
func (cp *ControlPlane) AddStretchFields(ctx context.Context) error {
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, "kafkanodepools.kafka.strimzi.io", metav1.GetOptions{})
	if err != nil {
		return err
	}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	object := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	stretch := map[string]apiextensionsv1.JSONSchemaProps{
		"target": object(map[string]apiextensionsv1.JSONSchemaProps{"clusterUrl": str, "secret": str}),
		"crossClusterTechnology": object(map[string]apiextensionsv1.JSONSchemaProps{
			"technology":    str,
			"configuration": object(map[string]apiextensionsv1.JSONSchemaProps{"submarinerClusterId": str}),
		}),
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return fmt.Errorf("KafkaNodePool %s has no spec schema", v.Name)
		}
		if spec.Properties == nil { // a stand-in that preserves unknown fields
			continue
		}
		for name, prop := range stretch {
			spec.Properties[name] = prop
		}
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return waitEstablished(ctx, client, crd.Name)
}
