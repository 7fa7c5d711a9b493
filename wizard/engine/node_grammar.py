"""Kubernetes' grammars that node facts must keep (node names, label keys and values), and a breach worded.

An API server enforces the name and label rules itself, but a NodeList file is hand-editable and
``status.nodeInfo`` is free text the kubelet reports. :func:`node_fact_errors` says what in a node
breaks them, one line each naming node, field and what is valid (:class:`NodeFactsError` carries
one); :func:`quoted` shows a value in such a line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wizard.engine.textsafe import printable

if TYPE_CHECKING:  # the facts import this module to check themselves
    from wizard.engine.facts import NodeFacts

_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE_RE = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
NODE_NAME_RULE = (
    "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', alphanumeric at both ends, at most 253 characters"
)
LABEL_VALUE_RULE = "a label value: at most 63 letters, digits, '-', '_' and '.', alphanumeric at both ends"
LABEL_KEY_RULE = "a label key: [DNS-1123 subdomain/]name, the name at most 63 letters, digits, '-', '_' and '.'"


class NodeFactsError(ValueError):
    """A node fact that breaks a Kubernetes or image grammar; the message names node, field and what is valid."""


def quoted(value: object, limit: int = 60) -> str:
    """A value for a one-line message: control characters escaped, long values cut."""
    text = printable(str(value))
    return f"'{text[:limit]}…'" if len(text) > limit else f"'{text}'"


def is_node_name(text: str) -> bool:
    """Kubernetes' rule for node names (a DNS-1123 subdomain of at most 253 characters)."""
    return len(text) <= 253 and _DNS_SUBDOMAIN_RE.fullmatch(text) is not None


def is_label_value(text: str) -> bool:
    """Kubernetes' rule for label values (at most 63 characters, ASCII alphanumerics and ``-_.`` inside)."""
    return len(text) <= 63 and _LABEL_VALUE_RE.fullmatch(text) is not None


def is_label_key(text: str) -> bool:
    """Kubernetes' rule for label keys: an optional DNS-1123 subdomain prefix and ``/``, then a name."""
    prefix, slash, name = text.rpartition("/")
    if slash and not (prefix and len(prefix) <= 253 and _DNS_SUBDOMAIN_RE.fullmatch(prefix)):
        return False
    return bool(name) and is_label_value(name)


def node_fact_errors(node: NodeFacts) -> list[str]:
    """What in ``node`` breaks Kubernetes' grammars, one line each naming node, field and what is valid.

    An API server enforces the name and label rules itself, but a NodeList file is hand-editable and
    ``status.nodeInfo`` is free text the kubelet reports: its kernel is used as the NFD label would be
    (NFD writes ``uname -r`` into a label), so it must be a valid label value too.
    """
    who = f"node {quoted(node.name)}"
    if not is_node_name(node.name):
        return [f"{who}: metadata.name is not {NODE_NAME_RULE}"]
    errors = []
    for key, value in node.labels.items():
        if not is_label_key(key):
            errors.append(f"{who}: label {quoted(key)} is not {LABEL_KEY_RULE}")
        elif not is_label_value(value):
            errors.append(f"{who}: label {key} value {quoted(value)} is not {LABEL_VALUE_RULE}")
    if node.kernel_source == "nodeInfo" and node.kernel and not is_label_value(node.kernel):
        errors.append(f"{who}: status.nodeInfo.kernelVersion {quoted(node.kernel)} is not {LABEL_VALUE_RULE}")
    return errors
