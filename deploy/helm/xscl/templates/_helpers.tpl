{{/* Names, labels and the pieces several templates share. */}}

{{- define "xscl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* RELEASE-xscl, at most 40 characters: Spark appends "-exec-N" to executor pod names. */}}
{{- define "xscl.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "xscl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "xscl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "xscl.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "xscl.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: xscl
{{- end }}

{{/* Labels of one component: (list $ "driver") */}}
{{- define "xscl.componentLabels" -}}
{{ include "xscl.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "xscl.componentSelector" -}}
{{ include "xscl.selectorLabels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "xscl.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "xscl.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "xscl.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "xscl.homeClaim" -}}
{{- .Values.home.existingClaim | default (printf "%s-home" (include "xscl.fullname" .)) }}
{{- end }}

{{/* The headless Service of the driver: executors reach it at this name. */}}
{{- define "xscl.driverService" -}}
{{ include "xscl.fullname" . }}-driver
{{- end }}

{{/* The process pair's coordination.k8s.io Lease (pair.enabled): one per release. */}}
{{- define "xscl.leaseName" -}}
{{ include "xscl.fullname" . }}-lease
{{- end }}

{{/*
Where the job's lease is kept, as options of `xscl serve` and of files/job_health.py (both
take job_args.add_lease_arguments): a pair's Lease object, else xscl's default (the file
lease on the home, for one driver).
*/}}
{{- define "xscl.leaseArgs" -}}
{{- if .Values.pair.enabled -}}
- --lease
- kubernetes
- --lease-name
- {{ include "xscl.leaseName" . | quote }}
- --lease-namespace
- {{ .Release.Namespace | quote }}
{{- end }}
{{- end }}

{{/* The options both driver probes give files/job_health.py: the job, and its lease. */}}
{{- define "xscl.healthArgs" -}}
- --home
- {{ .Values.home.mountPath | quote }}
- --name
- {{ .Values.job.name | quote }}
{{- with include "xscl.leaseArgs" . }}
{{ . }}
{{- end }}
{{- end }}

{{/* The two drivers of a pair on different nodes when the scheduler can (pair.enabled). */}}
{{- define "xscl.pairAntiAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "xscl.componentSelector" (list . "driver") | nindent 12 }}
{{- end }}

{{/*
The Spark settings of one driver pod (mode spark), as spark-submit options: its address
(its own DNS name under the headless Service), its pod (the owner of its executors) and its
executors' name prefix (two drivers of a pair must not both name theirs PREFIX-exec-1).
$(POD_NAME) is expanded by the kubelet.
*/}}
{{- define "xscl.driverPodSubmitArgs" -}}
{{- $host := printf "$(POD_NAME).%s.%s.svc" (include "xscl.driverService" .) .Release.Namespace -}}
--conf spark.driver.host={{ $host }} --conf spark.kubernetes.driver.pod.name=$(POD_NAME) --conf spark.kubernetes.executor.podNamePrefix=$(POD_NAME) pyspark-shell
{{- end }}

{{- define "xscl.metricsService" -}}
{{ include "xscl.fullname" . }}-metrics
{{- end }}

{{- define "xscl.queriesText" -}}
{{- .Values.queries | default (.Files.Get "files/queries.xscl") }}
{{- end }}

{{/* Where the ConfigMaps and volumes are mounted in the pods. */}}
{{- define "xscl.configDir" -}}/etc/xscl/config{{- end }}
{{- define "xscl.scriptsDir" -}}/etc/xscl/scripts{{- end }}
{{- define "xscl.sparkConfDir" -}}/etc/xscl/spark{{- end }}

{{- define "xscl.spool" -}}
{{ .Values.home.mountPath }}/spool
{{- end }}

{{/* Spark's fixed driver ports (executors connect to them through the headless Service). */}}
{{- define "xscl.driverPort" -}}7078{{- end }}
{{- define "xscl.blockManagerPort" -}}7079{{- end }}

{{/*
The options of the streaming job (`xscl serve` and submit.py share them: job_args.py),
one per line of a YAML list. Unset values leave xscl's own defaults.
*/}}
{{- define "xscl.jobArgs" -}}
{{- $job := .Values.job -}}
- --home
- {{ .Values.home.mountPath | quote }}
- --name
- {{ $job.name | quote }}
- --queries
- {{ printf "%s/queries.xscl" (include "xscl.configDir" .) | quote }}
- --trigger-seconds
- {{ $job.triggerSeconds | toString | quote }}
{{- with $job.maxRecordsPerBatch }}
- --max-records-per-batch
- {{ . | int64 | toString | quote }}
{{- end }}
{{- with $job.allowedLateness }}
- --allowed-lateness
- {{ . | quote }}
{{- end }}
- --feed-entries
- {{ $job.feedEntries | int64 | toString | quote }}
{{- with .Values.feedServer.baseUrl }}
- --feed-base-url
- {{ . | quote }}
{{- end }}
- --results-format
- {{ $job.resultsFormat | quote }}
{{- with $job.statePartitions }}
- --state-partitions
- {{ . | int64 | toString | quote }}
{{- end }}
{{- with $job.valueGroups }}
- --value-groups
- {{ . | int64 | toString | quote }}
{{- end }}
- --hot-salts
- {{ $job.hotSalts | int64 | toString | quote }}
- --hot-threshold
- {{ $job.hotThreshold | int64 | toString | quote }}
- --join-plan
- {{ $job.joinPlan | quote }}
- --cache-memory
- {{ $job.cacheMemory | int64 | toString | quote }}
{{- if $job.quiet }}
- --quiet
{{- end }}
{{- if .Values.pair.enabled }}
{{ include "xscl.leaseArgs" . }}
- --lease-seconds
- {{ .Values.pair.leaseSeconds | toString | quote }}
- --renew-seconds
- {{ .Values.pair.renewSeconds | toString | quote }}
{{- end }}
{{- end }}

{{/*
Spark properties of the job in both modes (spark-defaults.conf, or the SparkApplication's
sparkConf). The Role lists only the verbs these settings need: the driver does not delete
services or claims at its end and reuses no claims (in mode spark it creates neither; in mode
operator its Service is owned by the driver pod and goes with it).
*/}}
{{- define "xscl.sparkConf" -}}
{{- $conf := dict
  "spark.kubernetes.namespace" .Release.Namespace
  "spark.kubernetes.container.image" (include "xscl.image" .)
  "spark.kubernetes.container.image.pullPolicy" .Values.image.pullPolicy
  "spark.kubernetes.authenticate.driver.serviceAccountName" (include "xscl.serviceAccountName" .)
  "spark.kubernetes.executor.podNamePrefix" (include "xscl.fullname" .)
  "spark.kubernetes.executor.deleteOnTermination" "true"
  "spark.kubernetes.driver.service.deleteOnTermination" "false"
  "spark.kubernetes.driver.ownPersistentVolumeClaim" "false"
  "spark.kubernetes.driver.reusePersistentVolumeClaim" "false"
  "spark.driver.cores" (.Values.spark.driver.cores | int64 | toString)
  "spark.driver.memory" .Values.spark.driver.memory
  "spark.executor.instances" (.Values.spark.executor.instances | int64 | toString)
  "spark.executor.cores" (.Values.spark.executor.cores | int64 | toString)
  "spark.executor.memory" .Values.spark.executor.memory
  "spark.blockManager.port" (include "xscl.blockManagerPort" .)
}}
{{- with .Values.imagePullSecrets }}
{{- $_ := set $conf "spark.kubernetes.container.image.pullSecrets" (join "," .) }}
{{- end }}
{{- with .Values.spark.executor.requestCores }}
{{- $_ := set $conf "spark.kubernetes.executor.request.cores" . }}
{{- end }}
{{- with .Values.spark.executor.limitCores }}
{{- $_ := set $conf "spark.kubernetes.executor.limit.cores" . }}
{{- end }}
{{- if .Values.metrics.enabled }}
{{- $sink := "spark.metrics.conf.*.sink.statsd" }}
{{- $_ := set $conf "spark.metrics.namespace" .Values.job.name }}
{{- $_ := set $conf "spark.sql.streaming.metricsEnabled" "true" }}
{{- $_ := set $conf (printf "%s.class" $sink) "org.apache.spark.metrics.sink.StatsdSink" }}
{{- $_ := set $conf (printf "%s.host" $sink) (printf "%s.%s.svc" (include "xscl.metricsService" .) .Release.Namespace) }}
{{- $_ := set $conf (printf "%s.port" $sink) "9125" }}
{{- $_ := set $conf (printf "%s.period" $sink) (.Values.metrics.period | int64 | toString) }}
{{- $_ := set $conf (printf "%s.unit" $sink) "seconds" }}
{{- $_ := set $conf (printf "%s.prefix" $sink) "xscl" }}
{{- end }}
{{- toYaml (merge (deepCopy .Values.spark.conf) $conf) }}
{{- end }}

{{/* The home claim and /tmp: every xscl pod mounts them (name, then mount). */}}
{{- define "xscl.homeVolumes" -}}
- name: home
  persistentVolumeClaim:
    claimName: {{ include "xscl.homeClaim" . }}
- name: tmp
  emptyDir: {}
{{- end }}

{{- define "xscl.homeMounts" -}}
- name: home
  mountPath: {{ .Values.home.mountPath }}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* The queries and feed lists, and the scripts: mounted read-only (volumes, then mounts). */}}
{{- define "xscl.configVolumes" -}}
- name: config
  configMap:
    name: {{ include "xscl.fullname" . }}-config
- name: scripts
  configMap:
    name: {{ include "xscl.fullname" . }}-scripts
{{- end }}

{{- define "xscl.configMounts" -}}
- name: config
  mountPath: {{ include "xscl.configDir" . }}
  readOnly: true
- name: scripts
  mountPath: {{ include "xscl.scriptsDir" . }}
  readOnly: true
{{- end }}

{{/*
Spark's pod template for the executors (and, in mode operator, the driver): labels for the
PodDisruptionBudget and NetworkPolicy, the home volume, the security contexts. Spark fills
in the image, command, resources and its own volumes. (list $ "executor")
*/}}
{{- define "xscl.sparkPodTemplate" -}}
{{- $ := index . 0 }}
{{- $component := index . 1 -}}
apiVersion: v1
kind: Pod
metadata:
  labels:
    {{- include "xscl.componentSelector" (list $ $component) | nindent 4 }}
    app.kubernetes.io/part-of: xscl
spec:
  {{- if eq $component "executor" }}
  automountServiceAccountToken: false
  {{- end }}
  securityContext:
    {{- toYaml $.Values.podSecurityContext | nindent 4 }}
  {{- if eq $component "executor" }}
  {{- with $.Values.spark.executor.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $.Values.spark.executor.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $.Values.spark.executor.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
  containers:
    - name: spark-kubernetes-{{ $component }}
      env:
        {{- include "xscl.env" $ | nindent 8 }}
      securityContext:
        {{- toYaml $.Values.securityContext | nindent 8 }}
      volumeMounts:
        {{- include "xscl.homeMounts" $ | nindent 8 }}
        {{- if eq $component "driver" }}
        - name: config
          mountPath: {{ include "xscl.configDir" $ }}
          readOnly: true
        {{- end }}
  volumes:
    {{- include "xscl.homeVolumes" $ | nindent 4 }}
    {{- if eq $component "driver" }}
    - name: config
      configMap:
        name: {{ include "xscl.fullname" $ }}-config
    {{- end }}
{{- end }}

{{/* A container's image, pull policy and security context. */}}
{{- define "xscl.containerBase" -}}
image: {{ include "xscl.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end }}

{{/* Environment of every xscl container: the root file system is read-only, /tmp is not. */}}
{{- define "xscl.env" -}}
- name: HOME
  value: /tmp
{{- end }}

{{/* A pod's security context and image pull secrets. */}}
{{- define "xscl.podBase" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- end }}
