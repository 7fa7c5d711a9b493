"""Image pulls in the lane: a pod whose image's registry host the cluster cannot reach fails as a kubelet's would.

Each lane cluster has a reachable-registry list (``RealCluster.reachable``; ``None``: every host, the default).
With a list, kwok's `pod-ready` stages (and the host probe's) leave alone every pod with an image on another
host, and two stages play the kubelet's pull instead:

- `pod-pull-failed`: init containers run in order, so the first whose image cannot be pulled waits with
  ``ErrImagePull`` and every later container waits ``PodInitializing``; with every init container pulled, each
  main container whose image cannot be pulled waits ``ErrImagePull`` and the others run. The pod stays
  ``Pending``, not ready (``ContainersNotReady``, ``containers with unready status: [...]``).
- `pod-pull-backoff`, a moment later: each ``ErrImagePull`` becomes ``ImagePullBackOff``.

The wording is the kubelet's (kubernetes v1.36 pkg/kubelet/images/image_manager.go): the ``ErrImagePull`` message
is the runtime's error as it is (``evalCRIPullErr``'s fallback: containerd's ``failed to pull and unpack image …
dial tcp: lookup HOST …: no such host``), the back-off's ``Back-off pulling image "IMAGE": ErrImagePull: <that
error>`` (the previous pull's error kept in ``prevPullErrMsg``). A registry that becomes reachable later (the list
changed) lets `pod-ready` run the pod.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

BACKOFF_DELAY_MS = 2000
"""How long a container shows ErrImagePull before ImagePullBackOff (the kubelet's back-off starts at 10 s)."""

_HOSTS_JQ = (
    '[(.spec.initContainers // [])[], (.spec.containers // [])[] | .image | split("/") '
    '| if length > 1 and (.[0] | test("[.:]") or . == "localhost") then .[0] else "docker.io" end]'
)
_REASONS_JQ = (
    '[(.status.initContainerStatuses // [])[], (.status.containerStatuses // [])[] | .state.waiting.reason // ""]'
)


def unreachable_key(reachable: Sequence[str]) -> str:
    """A jq selector key that is ``true`` for a pod with an image on a host not in ``reachable``."""
    return f"{_HOSTS_JQ} - {json.dumps(list(reachable))} | length > 0"


def selector_rule(reachable: Sequence[str] | None, *, unreachable: bool) -> str:
    """The matchExpressions item (YAML, 4-space indent) selecting pods with (or without) an unreachable image."""
    if reachable is None:
        return ""
    key = unreachable_key(reachable).replace("'", "''")
    return f"    - key: '{key}'\n      operator: 'In'\n      values: ['{'true' if unreachable else 'false'}']\n"


# Go template (kwok's, with sprig): one container's host, name and tag (containerd's reading of the reference).
_REFERENCE = r"""{{ $parts := splitList "/" .image }}{{ $h := "docker.io" }}{{ $rest := .image }}
        {{ if and (gt (len $parts) 1) (or (contains "." (first $parts)) (contains ":" (first $parts)) (eq (first $parts) "localhost")) }}{{ $h = first $parts }}{{ $rest = join "/" (rest $parts) }}{{ else if eq (len $parts) 1 }}{{ $rest = printf "library/%s" .image }}{{ end }}
        {{ $name := $rest }}{{ $tag := "latest" }}{{ $sep := ":" }}
        {{ if contains "@" $rest }}{{ $name = first (splitList "@" $rest) }}{{ $tag = last (splitList "@" $rest) }}{{ $sep = "@" }}{{ else if regexMatch ":[^:/]+$" $rest }}{{ $name = regexReplaceAll ":[^:/]+$" $rest "" }}{{ $tag = regexReplaceAll "^.*:" $rest "" }}{{ end }}
        {{ $full := printf "%s/%s%s%s" $h $name $sep $tag }}{{ $api := $h }}{{ if eq $h "docker.io" }}{{ $api = "registry-1.docker.io" }}{{ end }}
        {{ $err := printf "rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: failed to do request: Head %q: dial tcp: lookup %s on 10.0.0.2:53: no such host" $full $full (printf "https://%s/v2/%s/manifests/%s" $api $name $tag) $api }}
        {{ $msg := $err }}{{ if eq $reason "ImagePullBackOff" }}{{ $msg = printf "Back-off pulling image %q: ErrImagePull: %s" .image $err }}{{ end }}"""

_STAGE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: NAME
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
SELECT  DELAY
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $reason := "REASON" }}
      {{ $reach := list REACHABLE }}
      {{ $blocked := false }}{{ $unready := list }}{{ $uninit := list }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      REFERENCE
      {{ if $blocked }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, state: {waiting: {reason: PodInitializing}}}
      {{ $uninit = append $uninit .name }}
      {{ else if not (has $h $reach) }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, state: {waiting: {reason: {{ $reason }}, message: {{ $msg | Quote }}}}}
      {{ $blocked = true }}{{ $uninit = append $uninit .name }}
      {{ else }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}}
      {{ end }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      REFERENCE
      {{ if $blocked }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, started: false, restartCount: 0, state: {waiting: {reason: PodInitializing}}}
      {{ $unready = append $unready .name }}
      {{ else if not (has $h $reach) }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, started: false, restartCount: 0, state: {waiting: {reason: {{ $reason }}, message: {{ $msg | Quote }}}}}
      {{ $unready = append $unready .name }}
      {{ else }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, started: true, restartCount: 0, state: {running: {startedAt: {{ $now | Quote }}}}}
      {{ end }}
      {{ end }}
      conditions:
      {{ if $blocked }}
      - {lastTransitionTime: {{ $now | Quote }}, status: "False", type: Initialized, reason: ContainersNotInitialized, message: {{ printf "containers with incomplete status: [%s]" (join " " $uninit) | Quote }}}
      {{ else }}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
      {{ end }}
      - {lastTransitionTime: {{ $now | Quote }}, status: "False", type: Ready, reason: ContainersNotReady, message: {{ printf "containers with unready status: [%s]" (join " " $unready) | Quote }}}
      - {lastTransitionTime: {{ $now | Quote }}, status: "False", type: ContainersReady, reason: ContainersNotReady, message: {{ printf "containers with unready status: [%s]" (join " " $unready) | Quote }}}
      hostIP: "127.0.0.1"
      phase: Pending
      startTime: {{ $now | Quote }}
"""


def _reasons_rule(expression: str, value: str) -> str:
    return f"    - key: '{_REASONS_JQ} | {expression}'\n      operator: 'In'\n      values: ['{value}']\n"


def pull_stages(reachable: Sequence[str] | None) -> list[str]:
    """The two Stage documents of a cluster that reaches only ``reachable`` (none when it reaches every host)."""
    if reachable is None:
        return []
    hosts = " ".join(json.dumps(h) for h in reachable)
    base = _STAGE.replace("REFERENCE", _REFERENCE).replace("REACHABLE", hosts)
    failed = (
        base.replace("NAME", "pod-pull-failed")
        .replace("REASON", "ErrImagePull")
        .replace(
            "SELECT",
            selector_rule(reachable, unreachable=True)
            + _reasons_rule('any(. == "ErrImagePull" or . == "ImagePullBackOff")', "false"),
        )
        .replace("  DELAY\n", "")
    )
    backoff = (
        base.replace("NAME", "pod-pull-backoff")
        .replace("REASON", "ImagePullBackOff")
        .replace(
            "SELECT", selector_rule(reachable, unreachable=True) + _reasons_rule('any(. == "ErrImagePull")', "true")
        )
        .replace("  DELAY\n", f"  delay:\n    durationMilliseconds: {BACKOFF_DELAY_MS}\n")
    )
    return [failed, backoff]
