{{/* The chart's name, "ferry" unless nameOverride says otherwise. */}}
{{- define "ferry.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: fullnameOverride, else "ferry" for a release named ferry, else
"<release>-ferry" (the name being nameOverride when set). */}}
{{- define "ferry.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "ferry.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ferry.labels" -}}
app.kubernetes.io/name: {{ include "ferry.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ferry.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ferry.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ferry.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ferry.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator's image: pinned by image.digest when set, else by tag (default appVersion). */}}
{{- define "ferry.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The webhook configurations' name, as `ferry run` names its own: "ferry", or "ferry.<ns>..."
for the watched namespaces (so two releases watching different namespaces never collide). */}}
{{- define "ferry.webhookName" -}}
{{- if .Values.watchNamespaces -}}
{{- printf "ferry.%s" (join "." .Values.watchNamespaces) -}}
{{- else -}}
ferry
{{- end -}}
{{- end -}}

{{/* Where the webhooks apply: the watched namespaces, or every namespace. */}}
{{- define "ferry.namespaceSelector" -}}
{{- if .Values.watchNamespaces }}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: In
      values:
        {{- toYaml .Values.watchNamespaces | nindent 8 }}
{{- else }}
namespaceSelector: {}
{{- end }}
{{- end -}}

{{- define "ferry.webhookClientConfig" -}}
clientConfig:
  service:
    namespace: {{ .root.Release.Namespace }}
    name: {{ include "ferry.fullname" .root }}
    port: {{ .root.Values.webhook.port }}
    path: {{ .path }}
{{- end -}}

{{- define "ferry.certManagerAnnotation" -}}
{{- if eq .Values.webhook.certificates "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s-webhook" .Release.Namespace (include "ferry.fullname" .) }}
{{- end }}
{{- end -}}

{{/* "true" when features.<name> (list $ "name") is on. A missing key reads as the chart's own
default (ferry.featureDefaults): `helm upgrade --reuse-values` renders with the values of the chart
the release was installed from, which lack every switch added since. */}}
{{- define "ferry.switch" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- if dig $name (get (include "ferry.featureDefaults" . | fromYaml) $name) ($root.Values.features | default dict) }}true{{ end -}}
{{- end -}}

{{/* Each switch's default, as values.yaml has it: the four that reach across the cluster are off. */}}
{{- define "ferry.featureDefaults" -}}
secretReferences: false
configMapReferences: false
blueGreenService: false
kubeletStats: false
updateHooks: true
autoscale: true
extendedStatefulSets: true
triggers: true
directGo: true
{{- end -}}

{{/* The operator's --disable-features from the chart's `features` values (empty: all on). */}}
{{- define "ferry.disabledFeatures" -}}
{{- $off := list -}}
{{- if not (include "ferry.switch" (list . "secretReferences")) }}{{ $off = append $off "secret-references" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "configMapReferences")) }}{{ $off = append $off "config-map-references" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "blueGreenService")) }}{{ $off = append $off "blue-green-service" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "kubeletStats")) }}{{ $off = append $off "kubelet-stats" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "updateHooks")) }}{{ $off = append $off "update-hooks" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "autoscale")) }}{{ $off = append $off "autoscale" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "extendedStatefulSets")) }}{{ $off = append $off "extended-stateful-sets" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "triggers")) }}{{ $off = append $off "triggers" }}{{ end -}}
{{- if not (include "ferry.switch" (list . "directGo")) }}{{ $off = append $off "direct-go" }}{{ end -}}
{{- join "," $off -}}
{{- end -}}

{{/* "true" when feature (list $ "name") is on: its switch and that of the controller it serves
(kubeletStats serves autoscale; secretReferences, configMapReferences, blueGreenService and
updateHooks serve extendedStatefulSets). */}}
{{- define "ferry.feature" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $parent := get (dict "kubeletStats" "autoscale" "secretReferences" "extendedStatefulSets" "configMapReferences" "extendedStatefulSets" "blueGreenService" "extendedStatefulSets" "updateHooks" "extendedStatefulSets") $name -}}
{{- if and (include "ferry.switch" (list $root $name)) (or (not $parent) (include "ferry.switch" (list $root $parent))) }}true{{ end -}}
{{- end -}}

{{/* The names of a list of {name: ...} references, comma-separated (imagePullSecrets to a flag). */}}
{{- define "ferry.names" -}}
{{- $names := list -}}
{{- range . }}{{ $names = append $names .name }}{{ end -}}
{{- join "," $names -}}
{{- end }}

{{/* "true" when /metrics is served over HTTPS to authorized readers (metrics.secure). */}}
{{- define "ferry.secureMetrics" -}}
{{- if dig "secure" false (.Values.metrics | default dict) -}}true{{- end -}}
{{- end -}}

{{/* The port /metrics is served on: metrics.securePort when secure, else metrics.port. */}}
{{- define "ferry.metricsPort" -}}
{{- if include "ferry.secureMetrics" . -}}{{ dig "securePort" 8443 .Values.metrics }}{{- else -}}{{ .Values.metrics.port }}{{- end -}}
{{- end -}}

{{/* Ferry's serving certificates (webhook, secure metrics) come from cert-manager. */}}
{{- define "ferry.certManager" -}}
{{- if and (or .Values.webhook.enabled (include "ferry.secureMetrics" .)) (eq .Values.webhook.certificates "cert-manager") -}}true{{- end -}}
{{- end -}}

{{/* Ferry's serving certificates come from its own CA, kept in <release>-webhook-ca. */}}
{{- define "ferry.ownCa" -}}
{{- if and (or .Values.webhook.enabled (include "ferry.secureMetrics" .)) (eq .Values.webhook.certificates "operator") -}}true{{- end -}}
{{- end -}}
