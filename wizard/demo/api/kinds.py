"""The resource types the demo API serves: built-in ones plus those the stored CRDs define."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.demo.api.store import Store

ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One served resource of one group/version."""

    plural: str
    singular: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    """The CRD's openAPIV3Schema (custom resources only)."""
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        """Whether ``/status`` is a separate subresource (status ignored on main-resource writes)."""
        return "status" in self.subresources

    @property
    def is_custom(self) -> bool:
        return self.schema is not None


def _builtin(
    plural: str,
    kind: str,
    group: str,
    namespaced: bool,
    short: tuple[str, ...] = (),
    subs: tuple[str, ...] = ("status",),
    cats: tuple[str, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
) -> ResourceType:
    return ResourceType(plural, kind.lower(), kind, group, "v1", namespaced, short, verbs, subs, cats)


BUILTINS: tuple[ResourceType, ...] = (
    _builtin("namespaces", "Namespace", "", False, ("ns",)),
    _builtin("nodes", "Node", "", False, ("no",)),
    _builtin("pods", "Pod", "", True, ("po",), ("status", "log", "exec"), ("all",)),
    _builtin("configmaps", "ConfigMap", "", True, ("cm",), ()),
    _builtin("secrets", "Secret", "", True, (), ()),
    _builtin("events", "Event", "", True, ("ev",), ()),
    # what the GPU Operator's chart installs beside its Deployment (a real helm creates them in the demo too)
    _builtin("serviceaccounts", "ServiceAccount", "", True, ("sa",), ()),
    _builtin("roles", "Role", "rbac.authorization.k8s.io", True, (), ()),
    _builtin("rolebindings", "RoleBinding", "rbac.authorization.k8s.io", True, (), ()),
    _builtin("clusterroles", "ClusterRole", "rbac.authorization.k8s.io", False, (), ()),
    _builtin("clusterrolebindings", "ClusterRoleBinding", "rbac.authorization.k8s.io", False, (), ()),
    _builtin("daemonsets", "DaemonSet", "apps", True, ("ds",), ("status",), ("all",)),
    _builtin("deployments", "Deployment", "apps", True, ("deploy",), ("status",), ("all",)),
    _builtin("jobs", "Job", "batch", True, (), ("status",), ("all",)),
    _builtin("customresourcedefinitions", "CustomResourceDefinition", "apiextensions.k8s.io", False, ("crd", "crds")),
    _builtin(
        "selfsubjectaccessreviews", "SelfSubjectAccessReview", "authorization.k8s.io", False, (), (), (), ("create",)
    ),
)


def custom_types(crd: dict[str, Any]) -> list[ResourceType]:
    """The served versions of one CRD as resource types."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {"type": "object"}
        subs = ("status",) if "status" in (version.get("subresources") or {}) else ()
        out.append(
            ResourceType(
                plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(),
                kind=names["kind"],
                group=spec["group"],
                version=version["name"],
                namespaced=spec.get("scope") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=subs,
                categories=tuple(names.get("categories") or ()),
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            )
        )
    return out


class Registry:
    """Looks up resource types; custom ones are rebuilt whenever the stored CRDs change."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._seen_rv: tuple[str, ...] | None = None
        self._custom: list[ResourceType] = []

    def custom(self) -> list[ResourceType]:
        crds = list(self._store.iter_objects("customresourcedefinitions"))
        stamp = tuple(c["metadata"]["resourceVersion"] for c in crds)
        if stamp != self._seen_rv:
            self._custom = [t for crd in crds for t in custom_types(crd)]
            self._seen_rv = stamp
        return self._custom

    def all(self) -> list[ResourceType]:
        return [*BUILTINS, *self.custom()]

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/<group>/<version>/<plural>`` (core group: ``""``)."""
        for rtype in self.all():
            if rtype.group == group and rtype.version == version and rtype.plural == plural:
                return rtype
        return None

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per group, in the order discovery lists them."""
        out: dict[str, list[str]] = {}
        for rtype in self.all():
            versions = out.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        return out
