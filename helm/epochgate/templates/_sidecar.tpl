{{/*
_sidecar.tpl: the named templates a client chart includes to run epochgate
next to its Kafka client. The client chart lists this chart as a dependency
(with mode: sidecar in its values under "epochgate"), so this chart renders
the config ConfigMap, and the client's pod template is one include:

  spec.template:  include "epochgate.sidecar.pod" (dict "top" . "pod" $pod)

where $pod is the client's own pod template as a dict (metadata, spec with
its containers), e.g. (include "client.pod" . | fromYaml). It returns that
pod template with epochgate added: the config checksum annotation, the
grace period (raised to what a drain needs), the container (initContainers
for a native sidecar, containers otherwise), the bootstrap env var on every
client container, the volumes, and an fsGroup when the pod mounts Secrets
and has none, so the Secrets are mounted 0440 instead of world-readable.

The pieces it is made of stay available for pod templates built otherwise:
  metadata.annotations:  include "epochgate.sidecar.annotations" (dict "top" .)
  spec.terminationGracePeriodSeconds:
                         include "epochgate.sidecar.terminationGracePeriodSeconds" (dict "top" .)
  spec.initContainers:   include "epochgate.sidecar" (dict "top" . "slot" "initContainers")
  spec.containers:       include "epochgate.sidecar" (dict "top" . "slot" "containers")
  the client's env:      include "epochgate.sidecar.clientEnv" (dict "top" .)
  spec.volumes:          include "epochgate.sidecar.volumes" (dict "top" . "fsGroup" <the pod's fsGroup>)

Every template takes a dict: "top" is the client chart's root context (.);
"values" (optional) is epochgate's values, by default .top.Values.epochgate
(the dependency's name or alias). "epochgate.sidecar" renders its list entry
only into the slot that sidecar.native selects: initContainers (native
sidecar, restartPolicy: Always, Kubernetes 1.29+) or containers.
"epochgate.sidecar.volumes" mounts the Secrets 0440 when given the pod's
fsGroup, with Kubernetes' default 0644 otherwise.
Must never: read .top.Chart (it is the client's chart, not this one).
*/}}

{{/* Context the shared helpers expect (.Values, .Release), built from the sidecar dict. */}}
{{- define "epochgate.sidecar.context" -}}
{{- $v := .values | default (get .top.Values "epochgate") -}}
{{- if not $v -}}
{{- fail "epochgate.sidecar: no epochgate values; pass (dict \"top\" . \"values\" .Values.<alias>) or name the dependency epochgate" -}}
{{- end -}}
{{- if ne $v.mode "sidecar" -}}
{{- fail "epochgate.sidecar: set mode: sidecar in the epochgate values, or the chart also renders a gateway" -}}
{{- end -}}
{{- toJson (dict "Values" $v "Release" .top.Release) -}}
{{- end -}}

{{/* "true" when the sidecar is a native one (initContainers), "" otherwise. */}}
{{- define "epochgate.sidecar.native" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- if $ctx.Values.sidecar.native -}}
{{- $kube := .top.Capabilities.KubeVersion.Version -}}
{{- if semverCompare "<1.29.0-0" $kube -}}
{{- fail (printf "epochgate.sidecar: sidecar.native needs Kubernetes 1.29 or later (restartPolicy: Always in initContainers); the target is %s" $kube) -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/* The epochgate container as a list entry, in the slot sidecar.native selects. */}}
{{- define "epochgate.sidecar" -}}
{{- $slot := required "epochgate.sidecar: pass \"slot\": \"containers\" or \"initContainers\"" .slot -}}
{{- if not (has $slot (list "containers" "initContainers")) -}}
{{- fail (printf "epochgate.sidecar: slot must be containers or initContainers, not %s" $slot) -}}
{{- end -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- $native := include "epochgate.sidecar.native" . -}}
{{- if and $native (eq $slot "initContainers") -}}
- {{ include "epochgate.container" (dict "ctx" $ctx "kind" "native-sidecar") | nindent 2 | trim }}
{{- else if and (not $native) (eq $slot "containers") -}}
- {{ include "epochgate.container" (dict "ctx" $ctx "kind" "sidecar") | nindent 2 | trim }}
{{- end -}}
{{- end -}}

{{/* env entry for the client container: the bootstrap address on localhost. */}}
{{- define "epochgate.sidecar.clientEnv" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
- name: {{ $ctx.Values.sidecar.clientEnvName }}
  value: "127.0.0.1:{{ int $ctx.Values.ports.bootstrap }}"
{{- end -}}

{{/* The config volume and the Secret volumes (SASL, TLS), as list entries for spec.volumes. */}}
{{- define "epochgate.sidecar.volumes" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- $_ := set $ctx "podFsGroup" .fsGroup -}}
{{- $mode := include "epochgate.secretMode" $ctx -}}
- name: epochgate-config
  configMap:
    name: {{ include "epochgate.configMapName" $ctx }}
{{- if $ctx.Values.sasl.existingSecret }}
- name: epochgate-sasl
  secret:
    secretName: {{ $ctx.Values.sasl.existingSecret }}
    {{- with $mode }}
    defaultMode: {{ . }}
    {{- end }}
{{- end }}
{{- with include "epochgate.tlsVolumes" $ctx }}
{{ . | trim }}
{{- end }}
{{- end -}}

{{/* Pod annotations: the config checksum, so a config change rolls the client's pods. */}}
{{- define "epochgate.sidecar.annotations" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- include "epochgate.configChecksum" $ctx -}}
{{- end -}}

{{/* Grace period the client pod needs so epochgate can drain (plain sidecars get the preStop sleep too). */}}
{{- define "epochgate.sidecar.terminationGracePeriodSeconds" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- include "epochgate.terminationGracePeriodSeconds" $ctx -}}
{{- end -}}

{{/* "true" when the sidecar mounts a Secret (SASL or TLS), "" otherwise. */}}
{{- define "epochgate.sidecar.mountsSecrets" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- if or $ctx.Values.sasl.existingSecret (include "epochgate.tlsMountList" $ctx | fromYaml).mounts -}}
true
{{- end -}}
{{- end -}}

{{/*
The client's pod template ("pod": a dict with metadata and spec) with
epochgate added, as YAML for spec.template: the one include a client chart
needs. The client's own values win except where a sidecar needs more: the
grace period is raised to what a drain takes, and a pod that mounts
Secrets without an fsGroup gets epochgate's runAsGroup as its fsGroup, so
the Secrets are mounted 0440 (owner root, that group) and epochgate, in
that group, reads them while other users in the pod's containers cannot.
*/}}
{{- define "epochgate.sidecar.pod" -}}
{{- $ctx := include "epochgate.sidecar.context" . | fromJson -}}
{{- $pod := deepCopy (required "epochgate.sidecar.pod: pass \"pod\": the client's pod template as a dict (metadata, spec)" .pod) -}}
{{- $args := dict "top" .top -}}
{{- if .values }}{{- $_ := set $args "values" .values -}}{{- end -}}
{{- $meta := $pod.metadata | default dict -}}
{{- $annotations := $meta.annotations | default dict -}}
{{- with include "epochgate.sidecar.annotations" $args | fromYaml -}}
{{- $annotations = merge $annotations . -}}
{{- end -}}
{{- if $annotations }}{{- $_ := set $meta "annotations" $annotations -}}{{- end -}}
{{- $_ := set $pod "metadata" $meta -}}
{{- $spec := required "epochgate.sidecar.pod: the pod template has no spec" $pod.spec -}}
{{- $grace := int (include "epochgate.sidecar.terminationGracePeriodSeconds" $args) -}}
{{- if lt (int ($spec.terminationGracePeriodSeconds | default 0)) $grace -}}
{{- $_ := set $spec "terminationGracePeriodSeconds" $grace -}}
{{- end -}}
{{- $env := include "epochgate.sidecar.clientEnv" $args | fromYamlArray -}}
{{- $containers := list -}}
{{- range (required "epochgate.sidecar.pod: the pod template has no containers" $spec.containers) -}}
{{- $c := . -}}
{{- $_ := set $c "env" (concat ($c.env | default list) $env) -}}
{{- $containers = append $containers $c -}}
{{- end -}}
{{- $security := $spec.securityContext | default dict -}}
{{- if and (include "epochgate.sidecar.mountsSecrets" $args) (not $security.fsGroup) -}}
{{- $_ := set $security "fsGroup" (int (required "epochgate.sidecar.pod: securityContext.runAsGroup is needed to mount Secrets 0440" $ctx.Values.securityContext.runAsGroup)) -}}
{{- end -}}
{{- if $security }}{{- $_ := set $spec "securityContext" $security -}}{{- end -}}
{{- $slotArgs := merge (dict "slot" "containers") $args -}}
{{- $containers = concat $containers (include "epochgate.sidecar" $slotArgs | fromYamlArray) -}}
{{- $_ := set $spec "containers" $containers -}}
{{- if include "epochgate.sidecar.native" $args -}}
{{- $initArgs := merge (dict "slot" "initContainers") $args -}}
{{- $_ := set $spec "initContainers" (concat ($spec.initContainers | default list) (include "epochgate.sidecar" $initArgs | fromYamlArray)) -}}
{{- end -}}
{{- $volArgs := merge (dict "fsGroup" $security.fsGroup) $args -}}
{{- $_ := set $spec "volumes" (concat ($spec.volumes | default list) (include "epochgate.sidecar.volumes" $volArgs | fromYamlArray)) -}}
{{- $_ := set $pod "spec" $spec -}}
{{- toYaml $pod -}}
{{- end -}}
