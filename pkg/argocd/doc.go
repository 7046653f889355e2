// Package argocd holds kafkalink's Argo CD health checks: the classification of every condition
// reason kafkalink writes as Healthy, Progressing or Degraded (reasons.go), and the Lua scripts
// generated from it and from lua/*.lua into manifests/argocd, laid out as Argo CD's
// resource_customizations tree, with an argocd-cm patch that holds the same scripts (render.go).
//
// Run runs a script as Argo CD does (gopher-lua, a global obj, no string library). The tests run
// the scripts with it on
// the golden objects of manifests/argocd/<group>/<Kind>/health_test.yaml and on every status
// of the gateway translator's golden cases, and fail when a reason constant of pkg/binding,
// pkg/bindingcontroller or pkg/gateway is not classified.
package argocd
