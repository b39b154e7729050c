{{/* Labels every object carries, as manifests/base sets them. */}}
{{- define "wayfinder.labels" -}}
app.kubernetes.io/name: pilot-discovery
app.kubernetes.io/part-of: wayfinder
{{- end }}

{{/* selfSignedCA is true when security is on and no certificate is given. */}}
{{- define "wayfinder.selfSignedCA" -}}
{{- if and .Values.security.enabled (not .Values.security.tls.certSecret) }}true{{ end }}
{{- end }}
