package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NewKubeClient is the clientset of Kubernetes' built-in kinds, speaking protobuf to the API
// server. Built-in kinds are where kafkalink's volume is (a Secret per binding, Services per
// broker, and their watches): protobuf costs the API server less to encode than JSON, and the
// operator less to decode, which at thousands of objects is CPU on both sides and garbage in
// the operator. Apply bodies stay JSON (server-side apply takes no protobuf). Custom resources
// have no protobuf form: their clients keep the configuration as it is.
func NewKubeClient(cfg *rest.Config) (kubernetes.Interface, error) {
	pb := rest.CopyConfig(cfg)
	pb.ContentType = runtime.ContentTypeProtobuf
	pb.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return kubernetes.NewForConfig(pb)
}
