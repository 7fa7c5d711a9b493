"""The demo's node shell: what ``sh -c`` does with a script, from its grammar to the commands it runs.

Lists (``;``, newline, ``&&``, ``||``), pipelines (``|``), quoting (``'…'``, ``"…"``, ``\\``),
parameter expansion (``$name``, ``${name}``, ``$?``), command substitution (``$(…)``, in a copy of
the variables, trailing newlines removed), assignments (``name=value``; alone, their status is the
last substitution's), field splitting of unquoted expansions, and redirections (``>``, ``>>``,
``2>``, ``2>&1``, ``>/dev/null``) applied left to right as a real shell does. A redirection that
cannot be opened (a read-only file system) fails the command without running it, with the shell's
message. The script is read by :mod:`wizard.demo.sim.shell_grammar` before any command runs; the
commands themselves are :mod:`wizard.demo.sim.nodecmd`'s business (``run``).
"""

from __future__ import annotations

from collections.abc import Callable

from wizard.demo.sim.shell_grammar import Command, Part, ShellSyntaxError, Word, parse

Result = tuple[int, str, str]
#: Runs one command: (argv, stdin) -> (exit code, stdout, stderr).
Runner = Callable[[list[str], str], Result]
#: Opens (``data`` None) or writes a file: (path, data, append) -> error message or None.
Writer = Callable[[str, str | None, bool], str | None]


class Shell:
    """One ``sh -c`` invocation: its variables and last status."""

    def __init__(self, run: Runner, write: Writer, variables: dict[str, str] | None = None) -> None:
        self.run_command = run
        self.write = write
        self.vars: dict[str, str] = dict(variables or {})
        self.status = 0
        self._sub_status: int | None = None
        self._sub_err = ""

    def _value(self, part: Part) -> str:
        kind, text, _ = part
        if kind == "lit":
            return text
        if kind == "var":
            return self._parameter(text)
        child = Shell(self.run_command, self.write, self.vars)
        child.status = self.status
        code, out, err = child.run(text)
        self._sub_status = code
        self._sub_err += err
        return out.rstrip("\n")

    def expand(self, word: Word, *, split: bool = True) -> list[str]:
        """The fields of one word (an unquoted expansion is split on whitespace)."""
        fields, kept = [""], word.quoted
        for part in word.parts:
            value = self._value(part)
            if part[0] == "lit" or part[2] or not split:
                fields[-1] += value
                kept = kept or bool(value)
                continue
            pieces = value.split()
            if pieces:
                fields[-1] += pieces[0]
                fields.extend(pieces[1:])
                kept = True
        return fields if kept or fields != [""] else []

    def run(self, script: str, stdin: str = "") -> Result:
        """Run a script: (last status, stdout, stderr)."""
        try:
            items = parse(script)
        except ShellSyntaxError as exc:
            return 2, "", f"sh: syntax error: {exc}\n"
        out, err = "", ""
        for connector, pipeline in items:
            if (connector == "&&" and self.status != 0) or (connector == "||" and self.status == 0):
                continue
            data = stdin
            for index, command in enumerate(pipeline):
                last = index == len(pipeline) - 1
                code, stdout, stderr = self._simple(command, data, piped=not last)
                self.status = code
                err += stderr
                data = stdout
            out += data
        return self.status, out, err

    def _simple(self, command: Command, stdin: str, *, piped: bool) -> Result:
        self._sub_status, self._sub_err = None, ""
        argv: list[str] = []
        for word in command.words:
            if word.literal is not None:
                argv.extend(word.literal)
            elif word.variable is not None:
                argv.append(self._parameter(word.variable))
            else:
                argv.extend(self.expand(word))
        if not command.redirs:  # most commands: stdout to the pipe or the script's output, stderr to its errors
            if not argv:
                self._assign(command)
                return (self._sub_status if self._sub_status is not None else 0), "", self._sub_err
            env_err = self._sub_err
            code, out, err = self.run_command(argv, stdin)
            return code, out, env_err + err
        # Where fd 1 and fd 2 go, applied left to right: "out", "err", "null" or ("file", path).
        targets: dict[int, object] = {1: "pipe" if piped else "out", 2: "err"}
        opened: list[str] = []
        for fd, op, target in command.redirs:
            if op.startswith(">&"):
                targets[fd] = targets[int(op[2])]
                continue
            if target is None:
                path = ""
            elif target.literal is not None:
                path = " ".join(target.literal)
            else:
                path = " ".join(self.expand(target, split=False))
            if path == "/dev/null":
                targets[fd] = "null"
                continue
            problem = self.write(path, None, op == ">>")
            if problem:
                return 1, "", self._sub_err + f"sh: can't create {path}: {problem}\n"
            targets[fd] = ("file", path)
            opened.append(path)
        if not argv:
            self._assign(command)
            return (self._sub_status if self._sub_status is not None else 0), "", self._sub_err
        env_err = self._sub_err
        code, out, err = self.run_command(argv, stdin)
        stdout, stderr = "", env_err
        for fd, data in ((1, out), (2, err)):
            where = targets[fd]
            if where in ("out", "pipe"):
                stdout += data
            elif where == "err":
                stderr += data
            elif isinstance(where, tuple):
                self.write(str(where[1]), data, True)
        return code, stdout, stderr

    def _assign(self, command: Command) -> None:
        for name, value in command.assignments:
            if value.literal is not None:
                self.vars[name] = "".join(value.literal)
            elif value.variable is not None:
                self.vars[name] = self._parameter(value.variable)
            else:
                self.vars[name] = "".join(self.expand(value, split=False))

    def _parameter(self, name: str) -> str:
        return str(self.status) if name == "?" else self.vars.get(name, "")
