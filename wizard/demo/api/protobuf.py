"""Decoding the protobuf request bodies kubectl's typed clients send to a built-in API (they have no JSON)."""

from __future__ import annotations

import base64
from typing import Any

from wizard.demo.api.status import ApiError

MAGIC = b"k8s\x00"

# Field tables: number -> (json name, kind). Kinds: "string", "bytes", "int", "bool", "skip",
# ("message", table), ("map", "string"|"bytes"), ("repeated", kind).
Kind = Any
Table = dict[int, tuple[str, Kind]]

_OBJECT_META: Table = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    6: ("resourceVersion", "string"),
    11: ("labels", ("map", "string")),
    12: ("annotations", ("map", "string")),
    14: ("finalizers", ("repeated", "string")),
}
_RESOURCE_ATTRIBUTES: Table = {
    1: ("namespace", "string"),
    2: ("verb", "string"),
    3: ("group", "string"),
    4: ("version", "string"),
    5: ("resource", "string"),
    6: ("subresource", "string"),
    7: ("name", "string"),
}
_NON_RESOURCE_ATTRIBUTES: Table = {1: ("path", "string"), 2: ("verb", "string")}

KINDS: dict[str, Table] = {
    "Namespace": {
        1: ("metadata", ("message", _OBJECT_META)),
        2: ("spec", ("message", {1: ("finalizers", ("repeated", "string"))})),
    },
    "ConfigMap": {
        1: ("metadata", ("message", _OBJECT_META)),
        2: ("data", ("map", "string")),
        3: ("binaryData", ("map", "bytes")),
        4: ("immutable", "bool"),
    },
    "Secret": {
        1: ("metadata", ("message", _OBJECT_META)),
        2: ("data", ("map", "bytes")),
        3: ("type", "string"),
        4: ("stringData", ("map", "string")),
        5: ("immutable", "bool"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", ("message", _OBJECT_META)),
        2: (
            "spec",
            (
                "message",
                {
                    1: ("resourceAttributes", ("message", _RESOURCE_ATTRIBUTES)),
                    2: ("nonResourceAttributes", ("message", _NON_RESOURCE_ATTRIBUTES)),
                },
            ),
        ),
    },
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The raw (field number, value) pairs of one message."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _scalar(kind: str, value: int | bytes) -> Any:
    if kind == "string":
        return bytes(value).decode("utf-8") if isinstance(value, bytes) else str(value)
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode() if isinstance(value, bytes) else ""
    if kind == "bool":
        return bool(value)
    return value


def _message(data: bytes, table: Table) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in table:
            continue
        name, kind = table[number]
        if isinstance(kind, tuple) and kind[0] == "message" and isinstance(value, bytes):
            out[name] = _message(value, kind[1])
        elif isinstance(kind, tuple) and kind[0] == "map" and isinstance(value, bytes):
            entry = dict(_fields(value))
            out.setdefault(name, {})[_scalar("string", entry.get(1, b""))] = _scalar(kind[1], entry.get(2, b""))
        elif isinstance(kind, tuple) and kind[0] == "repeated":
            out.setdefault(name, []).append(_scalar(kind[1], value))
        elif (isinstance(kind, str) and value not in (b"", 0)) or kind == "bool":
            out[name] = _scalar(kind, value)  # Go writes empty strings; JSON omits them
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object of a supported kind as its JSON form; 415 for any other kind."""
    if not body.startswith(MAGIC):
        raise ApiError(400, "the protobuf body does not start with the Kubernetes envelope")
    try:
        envelope = dict(_fields(body[len(MAGIC) :]))
        type_meta = _message(bytes(envelope.get(1, b"")), {1: ("apiVersion", "string"), 2: ("kind", "string")})
        kind = type_meta.get("kind", "")
        if kind not in KINDS:
            raise ApiError(
                415,
                f"the gpu-wizard demo reads protobuf bodies only for {', '.join(sorted(KINDS))}, not {kind or 'this kind'}; "
                "send JSON (for example kubectl apply -f)",
            )
        obj = _message(bytes(envelope.get(2, b"")), KINDS[kind])
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the protobuf body could not be decoded: {exc}") from None
    if kind == "Secret":
        obj.setdefault("type", "Opaque")
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
