"""A stand-in for the renderer's mirror item, for running mirror plans built by hand."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """Shaped like the renderer's MirrorItem: only ``source`` and ``target`` are used."""

    source: str
    target: str
