"""Reading YAML as a YAML 1.1 reader (kubectl, Helm) does, to check what the renderer writes."""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.resolver import VersionedResolver


class _Yaml11Resolver(VersionedResolver):
    """YAML 1.1 for every document of a stream (ruamel forgets a loader's version after a ``---``)."""

    @property
    def processing_version(self) -> Any:
        return (1, 1)


def yaml11_load_all(text: str) -> list[Any]:
    """The documents as a YAML 1.1 reader (kubectl, Helm) sees them."""
    reader = YAML(typ="safe", pure=True)
    reader.Resolver = _Yaml11Resolver
    return list(reader.load_all(text))
