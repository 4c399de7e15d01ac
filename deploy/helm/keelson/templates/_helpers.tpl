{{- define "keelson.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 50 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" }}{{- end -}}
{{- end -}}
{{- define "keelson.jobsNamespace" -}}{{ default (printf "%s-jobs" .Release.Namespace) .Values.jobsNamespace }}{{- end -}}
{{- define "keelson.serviceAccount" -}}{{ default (printf "%s-worker" (include "keelson.fullname" .)) .Values.serviceAccount.name }}{{- end -}}
{{- define "keelson.labels" -}}
app.kubernetes.io/name: keelson
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
{{- define "keelson.selector" -}}
app.kubernetes.io/name: keelson
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}
{{/* Temporal connection settings shared by the worker and the API: address, namespace, TLS, API key. */}}
{{- define "keelson.temporalEnv" -}}
- { name: TEMPORAL_ADDRESS, value: {{ .Values.temporal.address | quote }} }
- { name: TEMPORAL_NAMESPACE, value: {{ .Values.temporal.namespace | quote }} }
- { name: KEELSON_TASK_QUEUE, value: {{ .Values.temporal.taskQueue | quote }} }
- { name: KEELSON_CLUSTER, value: {{ .Values.cluster | quote }} }
{{- if .Values.temporal.tls }}
- { name: TEMPORAL_TLS, value: "true" }
{{- end }}
{{- if .Values.temporal.serverName }}
- { name: TEMPORAL_TLS_SERVER_NAME, value: {{ .Values.temporal.serverName | quote }} }
{{- end }}
{{- if .Values.temporal.tlsSecret }}
- { name: TEMPORAL_TLS_CERT, value: /etc/keelson/temporal-tls/tls.crt }
- { name: TEMPORAL_TLS_KEY, value: /etc/keelson/temporal-tls/tls.key }
{{- if .Values.temporal.tlsSecretHasCA }}
- { name: TEMPORAL_TLS_CA, value: /etc/keelson/temporal-tls/ca.crt }
{{- end }}
{{- end }}
{{- if .Values.temporal.apiKeySecret }}
- { name: TEMPORAL_API_KEY_FILE, value: /etc/keelson/temporal-api-key/api-key }
{{- end }}
{{- end -}}
{{/* Mounted, not passed as environment, so a rotated Secret reaches the running processes (no restart). */}}
{{- define "keelson.temporalVolumeMounts" -}}
{{- if .Values.temporal.tlsSecret }}
- { name: temporal-tls, mountPath: /etc/keelson/temporal-tls, readOnly: true }
{{- end }}
{{- if .Values.temporal.apiKeySecret }}
- { name: temporal-api-key, mountPath: /etc/keelson/temporal-api-key, readOnly: true }
{{- end }}
{{- end -}}
{{- define "keelson.temporalVolumes" -}}
{{- if .Values.temporal.tlsSecret }}
- name: temporal-tls
  secret: { secretName: {{ .Values.temporal.tlsSecret | quote }}, defaultMode: 0440 }
{{- end }}
{{- if .Values.temporal.apiKeySecret }}
- name: temporal-api-key
  secret: { secretName: {{ .Values.temporal.apiKeySecret | quote }}, defaultMode: 0440, items: [{ key: api-key, path: api-key }] }
{{- end }}
{{- end -}}
{{/* A threshold in whole seconds, `list "<value path>" <value>`: fails naming the value unless it is a positive integer. */}}
{{- define "keelson.seconds" -}}
{{- $name := index . 0 -}}{{- $v := index . 1 -}}
{{- if not (and (or (kindIs "int64" $v) (kindIs "float64" $v)) (gt (float64 $v) 0.0) (eq (float64 $v) (float64 (int64 $v)))) -}}
{{- fail (printf "%s must be a positive whole number of seconds, got %v" $name $v) -}}
{{- end -}}
{{- int64 $v -}}
{{- end -}}
{{/* Labels of the Prometheus Operator objects: the chart's, the component's, and monitoring.labels. */}}
{{- define "keelson.monitoringLabels" -}}
{{ include "keelson.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- with .root.Values.monitoring.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
