"""The demo API server's RFC 6902 and RFC 7386 PATCH bodies (the libraries behind them, as the server uses them)."""

from __future__ import annotations

import pytest

from wizard.demo.api.patch import json_patch, merge_patch
from wizard.demo.api.status import ApiError

NODE = {"metadata": {"labels": {"a": "1"}, "annotations": {"x/y": "z"}}, "spec": {"taints": [{"key": "t"}]}}


def test_json_patch_applies_every_operation_to_a_copy() -> None:
    ops = [
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "remove", "path": "/metadata/annotations/x~1y"},
        {"op": "add", "path": "/spec/taints/-", "value": {"key": "u"}},
        {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
        {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/d"},
        {"op": "test", "path": "/metadata/labels/d", "value": "2"},
        {"op": "replace", "path": "/spec/taints/0/key", "value": "v"},
    ]
    patched = json_patch(NODE, ops)
    assert patched == {
        "metadata": {"labels": {"b": "2", "c": "1", "d": "2"}, "annotations": {}},
        "spec": {"taints": [{"key": "v"}, {"key": "u"}]},
    }
    assert NODE["metadata"]["labels"] == {"a": "1"}  # the stored object is untouched


@pytest.mark.parametrize(
    ("ops", "status", "words"),
    [
        (
            [{"op": "remove", "path": "/metadata/missing"}],
            422,
            "remove operation does not apply at '/metadata/missing'",
        ),
        ([{"op": "test", "path": "/metadata/labels/a", "value": "2"}], 422, "testing value /metadata/labels/a failed"),
        ([{"op": "frobnicate", "path": "/a"}], 400, "invalid json patch operation"),
        ([{"op": "add", "path": "no-slash", "value": 1}], 422, "add operation does not apply at 'no-slash'"),
        ({"op": "add"}, 400, "must be a list of operations"),
    ],
)
def test_json_patch_errors_name_the_operation_not_the_object(ops: object, status: int, words: str) -> None:
    with pytest.raises(ApiError) as caught:
        json_patch(NODE, ops)
    assert caught.value.code == status
    assert words in str(caught.value)
    assert "'x/y'" not in str(caught.value)


def test_merge_patch_merges_maps_deletes_nulls_and_replaces_lists() -> None:
    patch = {"metadata": {"labels": {"a": None, "b": "2"}}, "spec": {"taints": [], "new": {"k": None, "v": 1}}}
    assert merge_patch(NODE, patch) == {
        "metadata": {"labels": {"b": "2"}, "annotations": {"x/y": "z"}},
        "spec": {"taints": [], "new": {"v": 1}},
    }
    assert merge_patch(NODE, ["not", "a", "map"]) == ["not", "a", "map"]
    assert NODE["metadata"]["labels"] == {"a": "1"}
