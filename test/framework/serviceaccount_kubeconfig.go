package framework

import (
	"context"
	"path/filepath"

	"k8s.io/client-go/rest"
)

// ServiceAccountKubeconfig is ServiceAccountConfig written as a kubeconfig file in the control
// plane's folder, for a program (an operator, a Service Binding implementation) that must run
// under exactly the RBAC bound to that ServiceAccount.
func (cp *ControlPlane) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (kubeconfig string, cfg *rest.Config, err error) {
	cfg, err = cp.ServiceAccountConfig(ctx, namespace, name)
	if err != nil {
		return "", nil, err
	}
	kubeconfig = filepath.Join(cp.Dir, namespace+"-"+name+".kubeconfig")
	return kubeconfig, cfg, writeKubeconfig(kubeconfig, cfg.Host, cfg.CAData, namespace+"-"+name, cfg.BearerToken)
}

// Impersonating returns an admin client configuration that acts as user (with groups), so its
// requests are authorized by exactly the RBAC bound to that user.
func (cp *ControlPlane) Impersonating(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	return cfg
}
