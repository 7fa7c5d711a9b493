"""The wizard's global keys, in a terminal and in a browser: one table for the bindings, the footer and F1 help.

A desktop browser keeps some keys for itself and never hands them to the page: Ctrl+N (new window),
Ctrl+T, Ctrl+W, Ctrl+P (print), Ctrl+S (save page) and F1 (browser help). In web mode
(``gpu-wizard serve``) each action therefore also has a key the browser leaves alone: F2, F4, F8
and F9 are bound by neither Chrome nor Firefox (F3 finds, F5 reloads, F6 and F10 move the focus to
the browser, F7 toggles caret browsing, F11 and F12 are full screen and developer tools). The
browser keys are bound in the terminal too (harmless there); only what the footer and F1 show changes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GlobalKey:
    """One action and its keys: Textual key names and how the footer writes them."""

    action: str
    label: str
    terminal: str
    browser: str
    terminal_shown: str
    browser_shown: str


BACK = GlobalKey("back", "Back", "escape", "escape", "esc", "Esc")
NEXT = GlobalKey("next", "Next", "ctrl+n", "f9", "^n", "F9")
HELP = GlobalKey("help", "Help", "f1", "f2", "f1", "F2")
PALETTE = GlobalKey("command_palette", "Palette", "ctrl+p", "f4", "^p", "F4")
SAVE = GlobalKey("save_answers", "Save", "ctrl+s", "f8", "^s", "F8")
QUIT = GlobalKey("quit", "Quit", "ctrl+q", "ctrl+q", "^q", "^Q")

GLOBAL_KEYS: tuple[GlobalKey, ...] = (BACK, NEXT, HELP, PALETTE, SAVE, QUIT)
"""In the order the footer shows them."""

BROWSER_KEPT = ("ctrl+n", "ctrl+t", "ctrl+w", "ctrl+p", "ctrl+s", "f1")
"""Keys a desktop browser keeps for itself: no web-mode action may depend on one of them alone."""


def browser_alternate(key: GlobalKey) -> str:
    """The extra key bound for ``key`` so it works in a browser ("" when the terminal key already does)."""
    return key.browser if key.browser != key.terminal else ""


def help_key(*, web: bool) -> str:
    """The help key as running text names it ("F1", or "F2" in a browser)."""
    return HELP.browser_shown if web else HELP.terminal_shown.upper()


def footer_hints(*, web: bool) -> tuple[tuple[str, str], ...]:
    """(key as shown, label) for every global key, in footer order."""
    return tuple((k.browser_shown if web else k.terminal_shown, k.label) for k in GLOBAL_KEYS)


def help_keys(*, web: bool) -> str:
    """The *Keys* paragraph at the end of every F1 help page."""
    if web:
        return """
**Keys (in the browser)** — `Tab`/`Shift+Tab` move between fields, `Enter` activates, `Esc` goes back a
step, `F9` next step, `F2` this help, `F4` command palette (jump to step, save answers, report,
theme), `F8` save answers, `Ctrl+Q` quit (or close the tab). The browser keeps `Ctrl+N`, `Ctrl+P`,
`Ctrl+S` and `F1` for itself; the Back/Next buttons and the mouse work everywhere.
"""
    return """
**Keys** — `Tab`/`Shift+Tab` move between fields, `Enter` activates, `Esc` goes back a step,
`Ctrl+N` next step, `F1` this help, `Ctrl+P` command palette (jump to step, save answers, report,
theme), `Ctrl+S` save answers, `Ctrl+Q` quit. The mouse works everywhere too.
"""
