"""Copying to the clipboard, said as it is: the wizard can only hand the text to the terminal.

Textual copies with the OSC 52 escape sequence; the terminal decides. Many accept it, some do not,
and tmux by default (``set-clipboard external``) ignores it from programs inside it. No program can
learn whether the copy landed, so the toast never claims it did: it says where the text went, what
tmux needs, and that the text is on screen to copy by hand.
"""

from __future__ import annotations

import os

from textual.app import App


def copy_text(app: App[object], text: str, what: str) -> str:
    """Hand ``text`` to the terminal's clipboard; the toast's words for ``what`` (e.g. "The helm command")."""
    app.copy_to_clipboard(text)
    if os.environ.get("TMUX"):
        return (
            f"{what} went to tmux, which puts it on your clipboard only with `set -g set-clipboard on`; "
            "it is also shown on the page to copy by hand."
        )
    return f"{what} was sent to your terminal's clipboard (OSC 52; some terminals ignore it); it is also shown on the page."
