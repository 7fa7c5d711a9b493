"""A read-only, scrollable view of YAML, shell or diff text, coloured with the theme's variables.

Rich's ``Syntax`` brings its own palette and ``TextArea`` needs tree-sitter grammars for YAML, so
this does the small amount of highlighting the wizard needs itself: keys, comments, list dashes,
diff lines, shell comments. Every colour is a theme variable, so a theme switch recolours it.
"""

from __future__ import annotations

import re
from typing import Literal

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

Language = Literal["yaml", "diff", "shell", "text"]

_YAML_KEY = re.compile(r"^(\s*(?:- )?)([^\s#:][^:#]*?)(:)(\s|$)(.*)$")
_COMMENT = re.compile(r"^(.*?)(\s*#.*)$")


def _yaml_line(line: str) -> Content:
    if line.lstrip().startswith("#"):
        return Content.assemble((line, "$text-muted"))
    if line.startswith("---"):
        return Content.assemble((line, "$text-muted"))
    match = _YAML_KEY.match(line)
    if not match:
        return Content(line)
    lead, key, colon, space, rest = match.groups()
    value, comment = rest, ""
    if " #" in rest and not rest.lstrip().startswith(("'", '"')):
        found = _COMMENT.match(rest)
        if found:
            value, comment = found.groups()
    return Content.assemble(
        (lead, "$text-muted"), (key, "$accent"), colon, space, (value, "$text"), (comment, "$text-muted")
    )


def _diff_line(line: str) -> Content:
    if line.startswith(("+++", "---")):
        return Content.assemble((line, "bold"))
    if line.startswith("+"):
        return Content.assemble((line, "$success"))
    if line.startswith("-"):
        return Content.assemble((line, "$error"))
    if line.startswith("@@"):
        return Content.assemble((line, "$accent"))
    return Content(line)


def _shell_line(line: str) -> Content:
    if line.lstrip().startswith("#"):
        return Content.assemble((line, "$text-muted"))
    head, _, rest = line.partition(" ")
    return Content.assemble((head, "$accent"), " " if rest else "", rest)


def highlight(text: str, language: Language) -> Content:
    """``text`` as styled content (theme variables only)."""
    painter = {"yaml": _yaml_line, "diff": _diff_line, "shell": _shell_line}.get(language)
    lines = text.rstrip("\n").split("\n")
    if painter is None:
        return Content("\n".join(lines))
    return Content("\n").join(painter(line) for line in lines)


class CodeView(VerticalScroll):
    """Scrollable highlighted text; :meth:`show` replaces it."""

    DEFAULT_CSS = """
    CodeView {
        height: 1fr;
        background: $surface;
        overflow-x: auto;
        & > Static { width: auto; min-width: 100%; padding: 0 1; }
        &.-wrap > Static { width: 100%; }
        /* focus shows as a bar down the left edge (the column is kept blank otherwise: no reflow) */
        border-left: blank;
        &:focus { border-left: outer $primary; }
    }
    """
    # Code keeps its lines (a wrapped skopeo command reads as two) and scrolls sideways; prose wraps.

    def __init__(
        self, text: str = "", language: Language = "text", *, content: Content | None = None, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self._text = text
        self._language: Language = language
        self._content = content
        """``text`` already highlighted (e.g. in a thread), or None to highlight it when composed."""
        self.set_class(language == "text", "-wrap")

    @property
    def text(self) -> str:
        """The plain text shown (what Save writes)."""
        return self._text

    def compose(self):  # type: ignore[no-untyped-def]
        content, self._content = self._content, None
        yield Static(content if content is not None else highlight(self._text, self._language), expand=False)

    def show(self, text: str, language: Language | None = None, *, content: Content | None = None) -> None:
        """Replace the text (``content``: already highlighted, e.g. in a thread, for long text)."""
        self._text = text
        if language is not None:
            self._language = language
        views = self.query_children(Static)
        if not views:  # mounted, not composed yet: compose shows it
            self._content = content
            return
        views.first().update(content if content is not None else highlight(text, self._language))
