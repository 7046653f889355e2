{{/* The operator's name: "kafkalink-operator" for a release named kafkalink (the YAML install's names). */}}
{{- define "kafkalink.name" -}}
{{- if contains "kafkalink" .Release.Name -}}
{{- printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-kafkalink-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kafkalink.selectorLabels" -}}
app.kubernetes.io/name: kafkalink-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kafkalink.labels" -}}
{{ include "kafkalink.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kafkalink
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* An image reference from {registry, repository, tag, digest}; the tag defaults to appVersion. */}}
{{- define "kafkalink.image" -}}
{{- $img := index . 0 -}}{{- $root := index . 1 -}}
{{- $repo := $img.repository -}}
{{- if $img.registry }}{{ $repo = printf "%s/%s" $img.registry $img.repository }}{{ end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default $root.Chart.AppVersion $img.tag | toString) -}}
{{- end -}}
{{- end -}}

{{/*
The ClusterRoles of manifests/rbac (binding, gateway, operator), copied into files/rbac by
'make manifests', so the chart grants exactly what the YAML install grants. Returns a YAML list
of {name, rules}, names rebased on this release's operator name.
*/}}
{{- define "kafkalink.clusterRoles" -}}
{{- $name := include "kafkalink.name" . -}}
{{- $roles := list -}}
{{- range $f := list "binding" "gateway" "operator" -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($.Files.Get (printf "files/rbac/%s.yaml" $f)) -1 -}}
{{- $o := fromYaml $doc -}}
{{- if eq (toString $o.kind) "ClusterRole" -}}
{{- $roles = append $roles (dict "name" (replace "kafkalink-operator" $name $o.metadata.name) "rules" $o.rules) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if ne (len $roles) 3 -}}{{- fail "files/rbac must hold the binding, gateway and operator ClusterRoles: run make manifests" -}}{{- end -}}
{{- toYaml $roles -}}
{{- end -}}
