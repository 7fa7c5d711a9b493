"""The one bounded reader (``wizard/bounded_read.py``): size, time, depth, count and string limits.

Real files, FIFOs and devices, no mocks: a FIFO no one writes to and one whose writer never stops
are refused within the deadline; ``/dev/zero`` at its first NUL byte; a sparse file past the size
limit from its size alone. Deep JSON ends in the depth limit, never a ``RecursionError``. The auth
file reader (``wizard.registry.auth``) is bounded the same way: the hostile catalogue cannot reach
it without a cluster.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from wizard.bounded_read import (
    NODELIST,
    REGISTRIES_CONF,
    BoundsError,
    InputError,
    Limits,
    load_bounded,
    read_bounded,
)
from wizard.registry.auth import read_auths

SMALL = Limits(kind="a test file", max_bytes=1 << 20, max_depth=4, max_nodes=20, max_scalar_chars=10, read_seconds=0.5)


def test_a_fifo_no_one_writes_to_is_refused_at_the_deadline(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputError, match=r"fifo: nothing to read after 0\.5 s .*save the content to a file"):
        read_bounded(fifo, SMALL)
    assert 0.5 <= time.monotonic() - started < 10  # the deadline, not a hang (a generous bound: a shared machine)


def test_a_fifo_that_never_ends_is_refused_by_size_or_deadline(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer(slow: bool) -> None:
        with open(fifo, "wb", buffering=0) as out:
            while not stop.is_set():
                try:
                    out.write(b"y\n")
                except BrokenPipeError:
                    return
                if slow:
                    time.sleep(0.01)

    for slow, message in (
        (False, "more than 1,000 bytes; a test file may hold at most 1,000"),
        (True, "still sending"),
    ):
        stop.clear()
        thread = threading.Thread(target=writer, args=(slow,), daemon=True)
        thread.start()
        limits = Limits(kind="a test file", max_bytes=1000 if not slow else 1 << 20, read_seconds=0.5)
        with pytest.raises(InputError, match=message):
            read_bounded(fifo, limits)
        stop.set()
        thread.join(timeout=5)


def test_a_fifo_with_a_short_document_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    thread = threading.Thread(target=lambda: fifo.write_text('{"items": []}'), daemon=True)
    thread.start()
    assert load_bounded(fifo, NODELIST) == {"items": []}
    thread.join(timeout=5)


def test_devices_stop_at_their_first_nul_byte() -> None:
    with pytest.raises(InputError, match=r"/dev/zero: cannot read the file: not text \(a NUL byte at byte 0\)"):
        read_bounded("/dev/zero", NODELIST)


def test_a_file_past_the_limit_is_refused_from_its_size(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as handle:
        handle.truncate(NODELIST.max_bytes + 1)  # 256 MiB + 1, none of it stored: a read would show
    with pytest.raises(BoundsError, match=r"sparse\.json: more than 268,435,456 bytes; a NodeList may hold"):
        read_bounded(sparse, NODELIST)


def test_missing_folder_and_unreadable_files_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"absent\.json: no such file$"):
        read_bounded(tmp_path / "absent.json", SMALL)
    with pytest.raises(InputError, match=r": is a folder; give a test file$"):
        read_bounded(tmp_path, SMALL)
    (tmp_path / "latin1").write_bytes(b"caf\xe9")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 3\)"):
        read_bounded(tmp_path / "latin1", SMALL)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"items": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 32 levels"),  # RecursionError inside
        ('{"items": [' + "[" * 40 + "]" * 40 + "]}", r"items\[0\]\[0\].*: nested deeper than 32 levels"),
        ('{"n": ' + "9" * 5000 + "}", "a number of more than 32 digits"),  # past Python's int digits
        ('{"n": ' + "9" * 40 + "}", "n: a number of more than 32 digits"),
        ('{"a": "' + "x" * 300_000 + '"}', "a: a value of 300,000 characters"),
        ('{"items": [', r"not valid JSON \(line 1, column 12: Expecting value\)"),  # JSON-looking: no YAML retry
    ],
)
def test_nodelist_json_bounds(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(text)
    with pytest.raises(BoundsError if "valid" not in message else InputError, match=message) as caught:
        load_bounded(path, NODELIST)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


def test_count_depth_and_string_limits_of_every_format(tmp_path: Path) -> None:
    cases = [
        ("[" + ",".join(["1"] * 30) + "]", ("json",), "more than 20 values; a test file needs far fewer"),
        ("- " + "\n- ".join(["1"] * 30) + "\n", ("yaml",), "more than 20 values"),
        ("a = [" + ", ".join(["1"] * 30) + "]\n", ("toml",), "more than 20 values"),
        ("a = [[[[[1]]]]]\n", ("toml",), r"a\[0\]\[0\]\[0\]: nested deeper than 4 levels"),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", ("toml",), "nested deeper than 4 levels"),  # tomllib recurses
        ('a = "' + "x" * 11 + '"\n', ("toml",), "a: a value of 11 characters"),
        ("a: [[[[[1]]]]]\n", ("yaml",), "nested deeper than 4 levels"),
        ('{"a": {"b": {"c": {"d": {}}}}}', ("json", "yaml"), r"a\.b\.c\.d: nested deeper than 4 levels"),
    ]
    for text, formats, message in cases:
        path = tmp_path / "f"
        path.write_text(text)
        with pytest.raises(BoundsError, match=message):
            load_bounded(path, SMALL, formats)


def test_yaml_falls_back_from_json_and_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text("items:\n  - metadata: {name: gpu-0}\n")
    assert load_bounded(path, NODELIST) == {"items": [{"metadata": {"name": "gpu-0"}}]}
    path.write_text("items:\n  - a: &x [1]\n")
    with pytest.raises(BoundsError, match=r"nodes\.yaml:2: items\.0\.a: anchors and aliases"):
        load_bounded(path, NODELIST)
    path.write_text("items: [\n")
    with pytest.raises(InputError, match=r"nodes\.yaml:2: not valid YAML"):
        load_bounded(path, NODELIST)


def test_registries_conf_is_toml_within_its_limits(tmp_path: Path) -> None:
    path = tmp_path / "registries.conf"
    path.write_text('[[registry]]\nlocation = "nvcr.io"\n[[registry.mirror]]\nlocation = "mirror.example.com"\n')
    assert (
        load_bounded(path, REGISTRIES_CONF, ("toml",))["registry"][0]["mirror"][0]["location"] == "mirror.example.com"
    )
    path.write_text("[[registry]\n")
    with pytest.raises(InputError, match=r"registries\.conf: not valid TOML"):
        load_bounded(path, REGISTRIES_CONF, ("toml",))


def test_the_auth_file_is_read_within_its_limits(tmp_path: Path) -> None:
    deep = tmp_path / "auth.json"
    deep.write_text('{"auths": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(ValueError, match=r"^auth file .*auth\.json: nested deeper than 16 levels$"):
        read_auths(deep)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"fifo\.json: cannot be read \(nothing to read after 1 s"):
        read_auths(fifo)


def test_a_file_that_reports_no_size_is_read_whole() -> None:
    """``/proc`` files are regular with ``st_size`` 0: the buffer follows the file, not its reported size."""
    assert "VmHWM:" in read_bounded("/proc/self/status", NODELIST)
