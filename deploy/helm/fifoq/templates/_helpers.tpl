{{/*
The chart's name, and the name of its objects. The full name is cut to
52 characters: a pod is named FULLNAME-ORDINAL and its controller
revision label FULLNAME-HASH, both within 63.
*/}}
{{- define "fifoq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "fifoq.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless Service that gives each pod its DNS name. */}}
{{- define "fifoq.headless" -}}
{{- printf "%s-headless" (include "fifoq.fullname" .) }}
{{- end }}

{{/* The ConfigMap of the pods' config files. */}}
{{- define "fifoq.configName" -}}
{{- printf "%s-config" (include "fifoq.fullname" .) }}
{{- end }}

{{/* The Secret the chart makes of auth.accessKeyId and auth.secretAccessKey. */}}
{{- define "fifoq.authSecretName" -}}
{{- if .Values.auth.existingSecret }}
{{- .Values.auth.existingSecret }}
{{- else if .Values.auth.accessKeyId }}
{{- printf "%s-auth" (include "fifoq.fullname" .) }}
{{- end }}
{{- end }}

{{- define "fifoq.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fifoq.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fifoq.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "fifoq.labels" -}}
helm.sh/chart: {{ include "fifoq.chart" . }}
{{ include "fifoq.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "fifoq.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fifoq.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* More than one node: the pods are members of a Raft cluster. */}}
{{- define "fifoq.clustered" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end }}
{{- end }}

{{/* The scheme of the SQS port. */}}
{{- define "fifoq.scheme" -}}
{{- if .Values.tls.secretName }}https{{ else }}http{{ end }}
{{- end }}

{{/* The DNS suffix of the pods: .HEADLESS.NAMESPACE.svc.DOMAIN */}}
{{- define "fifoq.podDomain" -}}
{{- printf "%s.%s.svc.%s" (include "fifoq.headless" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{/*
The ConfigMap of an earlier release (an empty map where the chart is
rendered without a cluster: helm template, lint, a client dry run).
*/}}
{{- define "fifoq.previousConfig" -}}
{{- toJson (lookup "v1" "ConfigMap" .Release.Namespace (include "fifoq.configName" .)) }}
{{- end }}

{{/*
How many pods bootstrap the cluster with --peers: cluster.initialMembers,
or the number recorded at install (the ConfigMap's annotation), or the
replicas. A value that contradicts the record is refused: a pod given
--peers after the cluster exists would bootstrap a second one.
*/}}
{{- define "fifoq.initialMembers" -}}
{{- $prev := include "fifoq.previousConfig" . | fromJson }}
{{- $recorded := "" }}
{{- with $prev.metadata }}{{ with .annotations }}{{ $recorded = get . "fifoq/initial-members" }}{{ end }}{{ end }}
{{- $given := .Values.cluster.initialMembers }}
{{- if not (kindIs "invalid" $given) }}
{{- if and $recorded (ne (toString (int $given)) $recorded) }}
{{- fail (printf "cluster.initialMembers is %d, but this release was installed with %s initial members: it cannot change (a new pod given --peers would bootstrap a second cluster)" (int $given) $recorded) }}
{{- end }}
{{- int $given }}
{{- else if $recorded }}
{{- $recorded }}
{{- else }}
{{- int .Values.replicas }}
{{- end }}
{{- end }}

{{/*
Refuse values that would make pods fifoq refuses to start, or a cluster
open to anyone, with a message that says what to set.
*/}}
{{- define "fifoq.validate" -}}
{{- $a := .Values.auth }}
{{- if and $a.existingSecret $a.accessKeyId }}
{{- fail "auth: give auth.existingSecret or auth.accessKeyId/auth.secretAccessKey, not both" }}
{{- end }}
{{- if ne (empty $a.accessKeyId) (empty $a.secretAccessKey) }}
{{- fail "auth: auth.accessKeyId and auth.secretAccessKey go together" }}
{{- end }}
{{- if not (or $a.existingSecret $a.accessKeyId $a.credentialsSecret $a.insecure) }}
{{- fail "auth: fifoq listens beyond loopback in a pod, so it needs credentials: set auth.existingSecret (a Secret with access-key-id and secret-access-key), auth.accessKeyId and auth.secretAccessKey, or auth.credentialsSecret; or auth.insecure=true to let anyone who reaches the pods do anything" }}
{{- end }}
{{- if and (include "fifoq.clustered" .) (not .Values.cluster.tls.secretName) (not .Values.cluster.insecureRaft) }}
{{- fail "cluster: more than one node needs mutual TLS between the members: set cluster.tls.secretName (a Secret with tls.crt, tls.key and ca.crt); or cluster.insecureRaft=true on a network you trust" }}
{{- end }}
{{- range $key := list "listen" "data_dir" "in_memory" "node_id" "raft_addr" "peers" "join" "advertise_url" "tls" "raft_tls" "raft_insecure" }}
{{- if hasKey $.Values.config $key }}
{{- fail (printf "config.%s: the chart sets %s itself (see the chart's README.md)" $key $key) }}
{{- end }}
{{- end }}
{{- range .Values.cluster.rejoin }}
{{- if or (lt (int .) 0) (ge (int .) (int $.Values.replicas)) }}
{{- fail (printf "cluster.rejoin: %v is no pod ordinal (0 to %d)" . (sub (int $.Values.replicas) 1)) }}
{{- end }}
{{- end }}
{{- end }}
