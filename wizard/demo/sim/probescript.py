"""gpu-wizard's probe scripts, answered step by step from the node's facts: read by their shape, never run.

What a real ``sh`` does with the same text is the real-cluster lane's and the probeset tests' business.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Callable

Result = tuple[int, str, str]
#: Runs one command of the node: (argv) -> (exit code, stdout, stderr).
Runner = Callable[[list[str]], Result]
#: Keeps a file the script wrote in the container: (path, text).
Writer = Callable[[str, str], None]

_EXEC_STEP = re.compile(r"(.+?) 2>&1; echo (\S+)\$\?(?:; |$)", re.S)
_OPEN_LOG = re.compile(r"printf '\{\"v\":1,\"r\":\[' >(\S+)")
_STEP = re.compile(r"o=\$\((.+) 2>&1\)")
_SQUEEZE = re.compile(r"o=\$\(printf %s \"\$o\" \| tr -s (.+)\)")
_CUT = re.compile(r"b=\$\(printf %s \"\$o\" \| head -c (\d+) \| base64 -w 0\)")
_PLUMBING = frozenset(
    {
        "s=",
        "s=,",
        "c=$?",
        'n=$(printf %s "$o" | wc -c)',
        'printf \'%s[%d,%d,"%s"]\' "$s" "$c" "$n" "$b" >>{log}',
        "printf ']}' >>{log}",
    }
)
UNKNOWN = "sh: the demo cluster answers only gpu-wizard's probe scripts, not this one\n"


def _argv(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


def answer(script: str, run: Runner, write: Writer) -> Result:
    """The script's result as ``sh -c`` would give it, or exit 2 for a script of no known shape."""
    if script.startswith("printf '{"):
        return _daemonset_shape(script, run, write)
    return _exec_shape(script, run)


def _exec_shape(script: str, run: Runner) -> Result:
    out, end, code = "", 0, 0
    for match in _EXEC_STEP.finditer(script):
        argv = _argv(match[1])
        if match.start() != end or argv is None:
            break
        code, stdout, stderr = run(argv)
        out += f"{stdout}{stderr}{match[2]}{code}\n"
        end = match.end()
    if end != len(script) or not script:
        return 2, "", UNKNOWN
    return 0, out, ""


def _daemonset_shape(script: str, run: Runner, write: Writer) -> Result:
    lines = script.splitlines()
    opened = _OPEN_LOG.fullmatch(lines[0]) if lines else None
    if opened is None:
        return 2, "", UNKNOWN
    log = opened[1]
    plumbing = {line.replace("{log}", log) for line in _PLUMBING}
    entries: list[list[object]] = []
    output, code = "", 0
    for line in lines[1:]:
        step, squeeze, cut = _STEP.fullmatch(line), _SQUEEZE.fullmatch(line), _CUT.fullmatch(line)
        if squeeze:
            chars = _argv(squeeze[1]) or [""]
            output = re.sub(f"([{re.escape(chars[0])}])\\1+", r"\1", output) if chars[0] else output
        elif step:
            argv = _argv(step[1])
            if argv is None:
                return 2, "", UNKNOWN
            code, stdout, stderr = run(argv)
            output = (stdout + stderr).rstrip("\n")  # $(…) drops the trailing newlines
        elif cut:
            data = output.encode()
            kept = base64.b64encode(data[: int(cut[1])]).decode()
            entries.append([code, len(data), kept])
        elif line not in plumbing:
            return 2, "", UNKNOWN
    write(log, json.dumps({"v": 1, "r": entries}, separators=(",", ":")))
    return 0, "", ""
