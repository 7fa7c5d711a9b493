"""Read paths of the demo API: single GET, paged LIST (plain or Table), and the plumbing they share."""

from __future__ import annotations

import base64
import binascii
import bisect
import heapq
import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from wizard.demo.api import protobuf, tables
from wizard.demo.api.kinds import ResourceType
from wizard.demo.api.selectors import combined
from wizard.demo.api.status import ApiError, bad_request, not_found
from wizard.demo.api.store import Key, Store, StoreGone


@dataclass(frozen=True)
class Target:
    """What a resource URL names: type, namespace, object name and subresource."""

    rtype: ResourceType
    namespace: str | None
    name: str | None
    subresource: str = ""


def json_response(obj: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    """A JSON response, with ``Warning: 299`` headers when given."""
    resp = web.Response(status=status, body=json.dumps(obj).encode(), content_type="application/json")
    for text in warnings or []:
        resp.headers.add("Warning", f"299 - {json.dumps(text)}")
    return resp


def parse_body(raw: bytes, content_type: str = "") -> Any:
    """A request body as JSON, or YAML (apply patches and some clients send YAML)."""
    if "protobuf" in content_type:
        return protobuf.decode(raw)
    if not raw.strip():
        raise bad_request("the request body is empty")
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return YAML(typ="safe", pure=True).load(raw.decode("utf-8"))
    except (YAMLError, UnicodeDecodeError) as exc:
        raise bad_request(f"the body of the request was in an unknown format: {exc}") from None


def _encode_continue(rv: int, key: Key) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, Key]:
    """The snapshot's resourceVersion and the last key served."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = data["start"]
        return int(data["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise bad_request("continue key is not valid: the token is not one this server issued") from None


def _expired() -> ApiError:
    """A continue token older than the history: what a real server answers once etcd compacted its revision."""
    return ApiError(
        410,
        "The provided continue parameter is too old to display a consistent list result. You can start a new "
        "list without the continue parameter.",
    )


def get_object(store: Store, request: web.Request, target: Target) -> web.Response:
    """GET of one object (plain JSON from the byte cache, or a one-row Table)."""
    rtype = target.rtype
    assert target.name is not None
    obj = store.lookup(rtype.plural, target.name, target.namespace)
    if obj is None:
        raise not_found(rtype.plural, rtype.group, target.name)
    if tables.wants_table(request.headers.get("Accept", "")):
        meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        return json_response(tables.table(rtype, [obj], meta, request.query.get("includeObject", "Metadata")))
    return web.Response(
        body=store.encoded(rtype.plural, obj, (rtype.api_version, rtype.kind)), content_type="application/json"
    )


def list_objects(store: Store, request: web.Request, target: Target) -> web.Response:
    """LIST with label/field selectors and ``limit``/``continue`` paging."""
    rtype = target.rtype
    query = request.query
    matcher = combined(query.get("labelSelector"), query.get("fieldSelector"))
    try:
        limit = max(0, int(query.get("limit") or 0))
    except ValueError:
        raise bad_request(f"invalid limit {query.get('limit')!r}") from None
    namespace = target.namespace
    with store.lock:
        rv = store.resource_version
        keys = store.keys(rtype.plural)
        then: dict[Key, dict[str, Any] | None] = {}
        after: Key | None = None
        token = query.get("continue")
        if token:
            # Every page shows the first page's snapshot, as a real server's do: a client that pages and
            # then watches from the list's resourceVersion misses nothing (from the live state it would).
            rv, after = _decode_continue(token)
            try:
                then = store.as_of(rtype.plural, rv)
            except StoreGone:
                raise _expired() from None
            # Keys deleted since the snapshot are listed still (the live keys hold the rest).
            gone = sorted(
                k for k, obj in then.items() if obj is not None and store.lookup(rtype.plural, k[1], k[0]) is None
            )
            if gone:
                keys = list(heapq.merge(keys, gone))
        start = bisect.bisect_left(keys, (namespace, "")) if namespace is not None else 0
        if after is not None:
            start = max(start, bisect.bisect_right(keys, after))
        items: list[dict[str, Any]] = []
        more, last_index = False, start - 1
        for index in range(start, len(keys)):
            key = keys[index]
            if namespace is not None and key[0] != namespace:
                break
            obj = then[key] if key in then else store.lookup(rtype.plural, key[1], key[0])
            if obj is None or (matcher is not None and not matcher(obj)):
                continue
            if limit and len(items) == limit:
                more = True
                break
            items.append(obj)
            last_index = index
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token and not more:
            store.list_done(rtype.plural, rv)
        if more:  # no remainingItemCount: neither gpu-wizard nor kubectl reads it
            meta["continue"] = _encode_continue(rv, keys[last_index])
        if tables.wants_table(request.headers.get("Accept", "")):
            return json_response(tables.table(rtype, items, meta, query.get("includeObject", "Metadata")))
        encoded = [store.encoded(rtype.plural, obj, (rtype.api_version, rtype.kind)) for obj in items]
    head = json.dumps({"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta})
    body = head[:-1].encode() + b',"items":[' + b",".join(encoded) + b"]}"
    return web.Response(body=body, content_type="application/json")
