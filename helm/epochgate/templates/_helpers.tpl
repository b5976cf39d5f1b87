{{/*
_helpers.tpl: names, labels, the rendered epochgate config, broker ports and
the epochgate container, shared by the gateway templates and the sidecar
templates (_sidecar.tpl).
Every helper here takes a context with .Values (this chart's values) and
.Release only, never .Chart: a client chart calls the sidecar templates from
its own context, where .Chart is the client's.
Must never: need a cluster to render (no lookup): the tests render with
`helm template` and no API server.
*/}}

{{/* Chart name, overridable: "epochgate". */}}
{{- define "epochgate.name" -}}
{{- default "epochgate" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of the release's objects: <release>-epochgate, unless the release name already holds it. */}}
{{- define "epochgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "epochgate.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of the config ConfigMap (also used by the sidecar's volume). */}}
{{- define "epochgate.configMapName" -}}
{{- printf "%s-config" (include "epochgate.fullname" . | trunc 56 | trimSuffix "-") -}}
{{- end -}}

{{/* Labels that select this release's gateway pods. */}}
{{- define "epochgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "epochgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels for every object of this chart. */}}
{{- define "epochgate.labels" -}}
{{ include "epochgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: epochgate
{{- end -}}

{{/* image reference: repository@digest, or repository:tag. */}}
{{- define "epochgate.image" -}}
{{- $img := .Values.image -}}
{{- if not $img.repository -}}
{{- fail "image.repository is not set: build the epochgate image and push it to your registry (docs/deploy.md, \"Container image\"), then set image.repository to it, e.g. --set image.repository=registry.example.com/epochgate" -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (required "image.tag must be set" $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "epochgate.sidecarMode" -}}
{{- if eq .Values.mode "sidecar" -}}true{{- end -}}
{{- end -}}

{{/* Host written into rewritten broker addresses. */}}
{{- define "epochgate.advertiseHost" -}}
{{- if include "epochgate.sidecarMode" . -}}
127.0.0.1
{{- else if .Values.advertiseHost -}}
{{- .Values.advertiseHost -}}
{{- else -}}
{{- printf "%s.%s.svc" (include "epochgate.fullname" .) .Release.Namespace -}}
{{- with .Values.clusterDomain }}.{{ . }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
Listener of every broker node id in .Values.brokers.nodeIds, as YAML
"ports: [{id, port, name}]": brokerPorts.map[id] if set, else
brokerPorts.base + id. Fails on a port outside 1-65535 and on any port used
twice (brokers, bootstrap, admin), so a clash never reaches the cluster.
*/}}
{{- define "epochgate.brokerPortList" -}}
{{- $v := .Values -}}
{{- $bootstrap := int $v.ports.bootstrap -}}
{{- $admin := int $v.ports.admin -}}
{{- if eq $bootstrap $admin -}}
{{- fail (printf "ports.bootstrap and ports.admin are both %d" $bootstrap) -}}
{{- end -}}
{{- $seen := dict (toString $bootstrap) "ports.bootstrap" (toString $admin) "ports.admin" -}}
ports:
{{- range $raw := $v.brokers.nodeIds }}
{{- $id := int $raw -}}
{{- $key := toString $id -}}
{{- $port := 0 -}}
{{- if hasKey $v.brokerPorts.map $key -}}
{{- $port = int (index $v.brokerPorts.map $key) -}}
{{- else -}}
{{- $port = add (int $v.brokerPorts.base) $id -}}
{{- end -}}
{{- if or (lt (int $port) 1) (gt (int $port) 65535) -}}
{{- fail (printf "broker node id %d: port %d (brokerPorts.base + id) is outside 1-65535; give sparse ids a port in brokerPorts.map" $id (int $port)) -}}
{{- end -}}
{{- if hasKey $seen (toString $port) -}}
{{- fail (printf "broker node id %d: port %d is already taken by %s" $id (int $port) (get $seen (toString $port))) -}}
{{- end -}}
{{- $_ := set $seen (toString $port) (printf "broker node id %d" $id) }}
  - id: {{ $id }}
    port: {{ $port }}
    name: node-{{ $id }}
{{- end }}
{{- end -}}

{{/*
The epochgate config file (docs/config.md). The chart owns the listeners,
the upstream and the admin address; everything under .Values.config is
epochgate's own keys, copied as they are.
*/}}
{{- define "epochgate.config" -}}
{{- $v := .Values -}}
{{- $host := ternary "127.0.0.1" "0.0.0.0" (eq $v.mode "sidecar") -}}
# Rendered by the epochgate chart (mode: {{ $v.mode }}). Edit the chart values, not this file.
listen: "{{ $host }}:{{ int $v.ports.bootstrap }}"
advertise_host: {{ include "epochgate.advertiseHost" . | quote }}
bootstrap_servers:
{{- range $v.kafka.bootstrapServers }}
  - {{ . | quote }}
{{- end }}
broker_ports:
  bind_host: {{ $host | quote }}
  base: {{ int $v.brokerPorts.base }}
  {{- /* epochgate checks base..base+max_node_id for clashes: exactly the listed ids that use base + id */}}
  {{- $maxId := 0 }}
  {{- range $v.brokers.nodeIds }}
  {{- if and (not (hasKey $v.brokerPorts.map (toString (int .)))) (gt (int .) $maxId) }}
  {{- $maxId = int . }}
  {{- end }}
  {{- end }}
  max_node_id: {{ $maxId }}
  max_listeners: {{ int ($v.brokerPorts.maxListeners | default 1024) }}
  absent_grace_ms: {{ int ($v.brokerPorts.absentGraceMs | default 300000) }}
{{- with $v.brokerPorts.map }}
  map:
{{- range $id, $port := . }}
    {{ int $id }}: {{ int $port }}
{{- end }}
{{- end }}
admin:
  enabled: true
  listen: "0.0.0.0:{{ int $v.ports.admin }}"
  {{- $admin := $v.admin | default dict }}
  {{- /* the admin port is on the pod address for probes and scraping; /debug stays loopback-only unless asked */}}
  expose_debug: {{ $admin.exposeDebug | default false }}
  idle_timeout_ms: {{ int ($admin.idleTimeoutMs | default 5000) }}
{{- include "epochgate.tlsConfig" . }}
{{- include "epochgate.identityLending" . }}
{{- /* empty blocks (limits: {}) are left out: the defaults apply */}}
{{- $cfg := dict -}}
{{- range $k, $val := $v.config -}}
{{- if or (not (kindIs "map" $val)) $val -}}
{{- $_ := set $cfg $k $val -}}
{{- end -}}
{{- end }}
{{ toYaml $cfg }}
{{ end -}}

{{/*
The tls and upstream_tls blocks of the config, naming the files of the
mounted Secrets (cert-manager's layout: tls.crt, tls.key, ca.crt). Only paths:
a rotated Secret changes the files, not the config, so it rolls no pod;
epochgate reloads the files itself.
*/}}
{{- define "epochgate.tlsConfig" -}}
{{- $v := .Values -}}
{{- $t := $v.tls | default dict -}}
{{- $u := $v.upstreamTls | default dict -}}
{{- if or (hasKey $v.config "tls") (hasKey $v.config "upstream_tls") -}}
{{- fail "set TLS with the chart's tls and upstreamTls values, not config.tls / config.upstream_tls (the chart mounts the Secrets and writes the paths)" -}}
{{- end -}}
{{- $sni := $t.sni | default dict -}}
{{- if and $sni.brokerHostPattern (not $t.existingSecret) -}}
{{- fail "tls.sni.brokerHostPattern needs tls.existingSecret (SNI routing reads the TLS ClientHello)" -}}
{{- end -}}
{{- if and (ne ($t.clientAuth | default "none") "none") (not $t.existingSecret) -}}
{{- fail "tls.clientAuth needs tls.existingSecret" -}}
{{- end -}}
{{- if $t.existingSecret }}
tls:
  cert_file: {{ printf "%s/tls.crt" $t.mountPath | quote }}
  key_file: {{ printf "%s/tls.key" $t.mountPath | quote }}
  client_auth: {{ $t.clientAuth | default "none" | quote }}
  {{- if ne ($t.clientAuth | default "none") "none" }}
  client_ca_file: {{ printf "%s/ca.crt" (ternary $t.clientCaMountPath $t.mountPath (not (empty $t.clientCaSecret))) | quote }}
  {{- end }}
  {{- if $sni.brokerHostPattern }}
  sni:
    broker_host_pattern: {{ $sni.brokerHostPattern | quote }}
    {{- with $sni.bootstrapHost }}
    bootstrap_host: {{ . | quote }}
    {{- end }}
  {{- end }}
{{- end }}
{{- if $u.enabled }}
upstream_tls:
  enabled: true
  {{- if $u.caSecret }}
  ca_file: {{ printf "%s/ca/ca.crt" $u.mountPath | quote }}
  {{- end }}
  {{- if $u.clientSecret }}
  cert_file: {{ printf "%s/client/tls.crt" $u.mountPath | quote }}
  key_file: {{ printf "%s/client/tls.key" $u.mountPath | quote }}
  {{- end }}
  verify_hostname: {{ ternary true $u.verifyHostname (not (hasKey $u "verifyHostname")) }}
{{- else if or $u.caSecret $u.clientSecret -}}
{{- fail "upstreamTls.caSecret / clientSecret are set but upstreamTls.enabled is false" -}}
{{- end }}
{{- end -}}

{{/*
The TLS Secrets as (volume name, Secret, mount path) rows, YAML
"mounts: [...]"; shared by the pod's volumes and the container's mounts.
*/}}
{{- define "epochgate.tlsMountList" -}}
{{- $t := .Values.tls | default dict -}}
{{- $u := .Values.upstreamTls | default dict -}}
mounts:
{{- if $t.existingSecret }}
  - {name: epochgate-tls, secret: {{ $t.existingSecret | quote }}, path: {{ $t.mountPath | quote }}}
{{- if and $t.clientCaSecret (ne ($t.clientAuth | default "none") "none") }}
  - {name: epochgate-tls-client-ca, secret: {{ $t.clientCaSecret | quote }}, path: {{ $t.clientCaMountPath | quote }}}
{{- end }}
{{- end }}
{{- if $u.enabled }}
{{- if $u.caSecret }}
  - {name: epochgate-upstream-ca, secret: {{ $u.caSecret | quote }}, path: {{ printf "%s/ca" $u.mountPath | quote }}}
{{- end }}
{{- if $u.clientSecret }}
  - {name: epochgate-upstream-client, secret: {{ $u.clientSecret | quote }}, path: {{ printf "%s/client" $u.mountPath | quote }}}
{{- end }}
{{- end }}
{{- end -}}

{{/* The TLS Secret volumes, as spec.volumes entries (whole Secrets, no
subPath: only then does the kubelet update the files on rotation). */}}
{{- define "epochgate.tlsVolumes" -}}
{{- $mode := include "epochgate.secretMode" . -}}
{{- range (include "epochgate.tlsMountList" . | fromYaml).mounts }}
- name: {{ .name }}
  secret:
    secretName: {{ .secret }}
    {{- with $mode }}
    defaultMode: {{ . }}
    {{- end }}
{{- end }}
{{- end -}}

{{/*
File mode of mounted Secrets (keys, passwords): 0440 (288), readable by
the pod's fsGroup only, where the pod has one: the gateway's pod (the
chart's podSecurityContext), or a sidecar's when the client chart names its
pod's fsGroup (.podFsGroup; "epochgate.sidecar.pod" does, setting one if
needed); empty otherwise (Kubernetes' default 0644 stays, as epochgate's
user could not read a 0440 file owned by root:root).
*/}}
{{- define "epochgate.secretMode" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- if .podFsGroup }}288{{ end -}}
{{- else if (.Values.podSecurityContext | default dict).fsGroup -}}
288
{{- end -}}
{{- end -}}

{{/* Pod annotation that changes whenever the config does (rolls the pods). */}}
{{- define "epochgate.configChecksum" -}}
{{- if .Values.rollOnConfigChange -}}
checksum/epochgate-config: {{ include "epochgate.config" . | sha256sum }}
{{- end -}}
{{- end -}}

{{/* Seconds from SIGTERM to SIGKILL: preStop sleep + drain timeout + 10 s, or the value, checked. */}}
{{- define "epochgate.terminationGracePeriodSeconds" -}}
{{- $v := .Values -}}
{{- $drain := div (add (int $v.config.drain_timeout_ms) 999) 1000 -}}
{{- $need := add (int $v.preStopSleepSeconds) $drain -}}
{{- if $v.terminationGracePeriodSeconds -}}
{{- if le (int $v.terminationGracePeriodSeconds) (int $need) -}}
{{- fail (printf "terminationGracePeriodSeconds %d must exceed preStopSleepSeconds + config.drain_timeout_ms (%d s), or draining pods are killed" (int $v.terminationGracePeriodSeconds) (int $need)) -}}
{{- end -}}
{{- int $v.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add $need 10 -}}
{{- end -}}
{{- end -}}

{{/*
The epochgate container. Takes a dict:
  ctx:  context with .Values and .Release
  kind: "gateway" | "sidecar" | "native-sidecar"
*/}}
{{- define "epochgate.container" -}}
{{- $v := .ctx.Values -}}
{{- $gateway := eq .kind "gateway" -}}
{{- $adminName := ternary "admin" "eg-admin" $gateway -}}
name: epochgate
image: {{ include "epochgate.image" .ctx | quote }}
imagePullPolicy: {{ $v.image.pullPolicy }}
args: ["--config", "/etc/epochgate/epochgate.yaml"]
{{- if eq .kind "native-sidecar" }}
restartPolicy: Always
{{- end }}
ports:
{{- if $gateway }}
  - name: bootstrap
    containerPort: {{ int $v.ports.bootstrap }}
    protocol: TCP
{{- range (include "epochgate.brokerPortList" .ctx | fromYaml).ports }}
  - name: {{ .name }}
    containerPort: {{ int .port }}
    protocol: TCP
{{- end }}
{{- else }}
{{- /* sidecar listeners bind 127.0.0.1: nothing outside the pod reaches them, so only the admin port is declared (probes, scraping) */}}
{{- $_ := include "epochgate.brokerPortList" .ctx }}
{{- end }}
  - name: {{ $adminName }}
    containerPort: {{ int $v.ports.admin }}
    protocol: TCP
startupProbe:
  httpGet:
    path: /healthz
    port: {{ $adminName }}
  periodSeconds: {{ $v.probes.startup.periodSeconds }}
  failureThreshold: {{ $v.probes.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ $adminName }}
  periodSeconds: {{ $v.probes.liveness.periodSeconds }}
  timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
  failureThreshold: {{ $v.probes.liveness.failureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ $adminName }}
  periodSeconds: {{ $v.probes.readiness.periodSeconds }}
  timeoutSeconds: {{ $v.probes.readiness.timeoutSeconds }}
  failureThreshold: {{ $v.probes.readiness.failureThreshold }}
{{- if and (ne .kind "native-sidecar") (gt (int $v.preStopSleepSeconds) 0) }}
lifecycle:
  preStop:
    exec:
      command: ["/bin/sleep", "{{ int $v.preStopSleepSeconds }}"]
{{- end }}
resources:
  {{- toYaml (ternary $v.resources $v.sidecar.resources $gateway) | nindent 2 }}
securityContext:
  {{- toYaml $v.securityContext | nindent 2 }}
volumeMounts:
  - name: epochgate-config
    mountPath: /etc/epochgate
    readOnly: true
{{- if $v.sasl.existingSecret }}
  - name: epochgate-sasl
    mountPath: {{ $v.sasl.mountPath }}
    readOnly: true
{{- end }}
{{- range (include "epochgate.tlsMountList" .ctx | fromYaml).mounts }}
  - name: {{ .name }}
    mountPath: {{ .path }}
    readOnly: true
{{- end }}
{{- end -}}

{{/*
Sidecar credential mode (config.upstream_sasl.on_behalf_of_clients) lends
epochgate's SASL principal to whoever connects. A gateway listens on the pod
address, so it needs required client certificates or an explicit
config.upstream_sasl.allow_remote_clients (the NetworkPolicy is then the only
boundary); epochgate refuses the same at start.
*/}}
{{- define "epochgate.identityLending" -}}
{{- $v := .Values -}}
{{- $sasl := (($v.config | default dict).upstream_sasl | default dict) -}}
{{- $tls := $v.tls | default dict -}}
{{- if and $sasl.on_behalf_of_clients (ne $v.mode "sidecar") (ne ($tls.clientAuth | default "none") "required") (not $sasl.allow_remote_clients) -}}
{{- fail "config.upstream_sasl.on_behalf_of_clients in gateway mode lends epochgate's SASL principal to every client that can reach the pod: set tls.clientAuth: required, or config.upstream_sasl.allow_remote_clients: true (a NetworkPolicy is then the only boundary)" -}}
{{- end -}}
{{- end -}}
