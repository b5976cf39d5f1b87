{{/*
_sidecar.tpl: the named templates a client chart includes to run epochgate
next to its Kafka client. The client chart lists this chart as a dependency
(with mode: sidecar in its values under "epochgate"), so this chart renders
the config ConfigMap, and the client's pod template includes:

  metadata.annotations:  include "epochgate.sidecar.annotations" (dict "top" .)
  spec.terminationGracePeriodSeconds:
                         include "epochgate.sidecar.terminationGracePeriodSeconds" (dict "top" .)
  spec.initContainers:   include "epochgate.sidecar" (dict "top" . "slot" "initContainers")
  spec.containers:       include "epochgate.sidecar" (dict "top" . "slot" "containers")
  the client's env:      include "epochgate.sidecar.clientEnv" (dict "top" .)
  spec.volumes:          include "epochgate.sidecar.volumes" (dict "top" .)

Every template takes a dict: "top" is the client chart's root context (.);
"values" (optional) is epochgate's values, by default .top.Values.epochgate
(the dependency's name or alias). "epochgate.sidecar" renders its list entry
only into the slot that sidecar.native selects: initContainers (native
sidecar, restartPolicy: Always, Kubernetes 1.29+) or containers.
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
- name: epochgate-config
  configMap:
    name: {{ include "epochgate.configMapName" $ctx }}
{{- if $ctx.Values.sasl.existingSecret }}
- name: epochgate-sasl
  secret:
    secretName: {{ $ctx.Values.sasl.existingSecret }}
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
