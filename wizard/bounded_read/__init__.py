"""The one bounded reader of untrusted input files: size, time, depth, count and string limits.

Every file a user hands the wizard goes through :func:`load_bounded` (or :func:`read_bounded` and
:func:`check_yaml` where a caller parses the text itself, as the answers file's round-trip loader
does): NodeLists, answers, demo scenarios, kubeconfigs, backups, registry auth files, registries.conf.
Each kind has its :class:`Limits`; anything past one is refused with :class:`InputError`, one line
that names the file (and line) and the limit, never a traceback.

* **Size and time.** A regular file larger than ``max_bytes`` is refused from its size, unread.
  Anything else (``/dev/zero``, a FIFO, a terminal, ``<(command)``) is opened without blocking and
  read through ``poll`` against a deadline of ``read_seconds``: one that never ends, or never starts,
  is refused within it; one that streams is cut at ``max_bytes``, or at its first NUL byte (no text
  file holds one: ``/dev/zero`` is refused before it fills memory).
* **JSON** is parsed by the C decoder, whose own recursion guard ends a deep nesting early
  (``RecursionError``, reported as the depth limit); a cheap count of ``, : [ {`` bounds the number
  of values before anything is built; a walk of the result checks depth, count, string and number
  sizes exactly. **TOML** is parsed by ``tomllib`` and walked the same way.
* **YAML** is checked before any document is built, in linear time: lines, line length, comments,
  flow collections opened on one line (ruamel's scanner looks up to 1,024 characters ahead at each
  ``[`` or ``{``: quadratic), then the parser's event stream (no anchors, aliases or tags; depth,
  node count, scalar and number sizes). The round-trip loader can be driven into unbounded memory by
  nested aliases (billion laughs), into ``RecursionError`` by deep nesting, into ``ValueError`` by a
  5,000-digit integer and into superlinear time by long or many comments; these checks stop each.

It sits at the bottom of the rooms (standard library and ruamel only), so the engine, the demo, the
cluster and the registry rooms share it. ``limits`` holds each kind's :class:`Limits` and the error,
``reader`` the reading and parsing, ``yaml_checks`` the YAML checks.
"""

from wizard.bounded_read.limits import (
    ANSWERS,
    AUTH_FILE,
    BACKUP,
    CERTIFICATE,
    CHART_YAML,
    KUBECONFIG,
    NODELIST,
    REGISTRIES_CONF,
    RENDERED_CHART,
    SCENARIO,
    BoundsError,
    InputError,
    Limits,
)
from wizard.bounded_read.reader import check_tree, load_bounded, parse_bounded, read_bounded
from wizard.bounded_read.yaml_checks import check_yaml

__all__ = [
    "ANSWERS",
    "AUTH_FILE",
    "BACKUP",
    "CERTIFICATE",
    "CHART_YAML",
    "KUBECONFIG",
    "NODELIST",
    "REGISTRIES_CONF",
    "RENDERED_CHART",
    "SCENARIO",
    "BoundsError",
    "InputError",
    "Limits",
    "check_tree",
    "check_yaml",
    "load_bounded",
    "parse_bounded",
    "read_bounded",
]
