{{/* The chart's name, or nameOverride. */}}
{{- define "cdc-relay.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release's name when it holds
the chart's, else <release>-<chart>. A release named cdc-relay gives the
names of the kustomize base.
*/}}
{{- define "cdc-relay.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels the selectors use: the pods of this release. */}}
{{- define "cdc-relay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cdc-relay.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The image's tag: image.tag, else v<appVersion>, the release's tag (a
leading v of appVersion is not doubled). */}}
{{- define "cdc-relay.imageTag" -}}
{{- .Values.image.tag | default (printf "v%s" (trimPrefix "v" .Chart.AppVersion)) }}
{{- end }}

{{/* Every object's labels. */}}
{{- define "cdc-relay.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cdc-relay.selectorLabels" . }}
app.kubernetes.io/version: {{ include "cdc-relay.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret with postgres-url and admin-token. */}}
{{- define "cdc-relay.secretName" -}}
{{- .Values.existingSecret | default (include "cdc-relay.fullname" .) }}
{{- end }}

{{/* The optional Secret with the SASL password. */}}
{{- define "cdc-relay.kafkaSaslSecretName" -}}
{{- .Values.kafkaSaslSecret | default (printf "%s-kafka-sasl" (include "cdc-relay.fullname" .)) }}
{{- end }}
