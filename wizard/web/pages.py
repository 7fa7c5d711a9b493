"""The HTML the classroom server sends: the wizard's page, and the pages that say no (403, full).

The wizard's page is a terminal element for ``textual.js`` (shipped by PyPI's ``textual-serve``, served
from that package's static folder): it opens the websocket named in ``data-session-websocket-url``
and draws what the app sends. Before it, ``classroom.js`` (``assets/web``) keeps that websocket for
the on-screen keys a phone needs (Esc, Tab, arrows, Enter and the F-keys the footer names), shows
the notice that matches the server's close code, and fits 80 columns on a narrow screen unless
``?fontsize=`` was given. No inline script and no third-party font or script: the page works
offline and under a strict Content-Security-Policy.
"""

from __future__ import annotations

import html
import json
from string import Template

_STYLE = """
      @font-face { font-family: "Roboto Mono"; src: url("${static}fonts/RobotoMono-VariableFont_wght.ttf"); }
      html, body { height: 100%; }
      body { margin: 0; background: #0c181f; color: rgba(255, 255, 255, 0.95);
             font-family: "Roboto Mono", menlo, monospace; }
      .notice { max-width: 44em; margin: 12vh auto; padding: 2em; background: #12232d; line-height: 1.5; }
      .notice h1 { font-size: 1.3em; margin-top: 0; }
      .notice a { color: #8fd3ff; }
      .wizard { display: flex; flex-direction: column; height: 100vh; height: 100dvh; }
      .textual-terminal { flex: 1 1 auto; min-height: 0; width: 100vw; }
      #keys { display: none; flex: none; flex-wrap: wrap; gap: 4px; padding: 4px; background: #12232d; }
      #keys button { flex: 1 0 2.6em; min-height: 2.4em; padding: 0 2px; font: inherit; font-size: 13px;
                     color: inherit; background: #1d3645; border: 1px solid #2c5066; border-radius: 4px;
                     touch-action: manipulation; user-select: none; }
      @media (max-width: 800px), (pointer: coarse) { #keys { display: flex; } }
      .ended { display: none; position: fixed; inset: 0; overflow: auto; background: rgba(12, 24, 31, 0.92); }
      body.-closed[data-ended="ended"] #ended-ended, body.-closed[data-ended="moved"] #ended-moved,
      body.-closed[data-ended="failed"] #ended-failed, body.-closed[data-ended="too-many"] #ended-too-many,
      body.-closed[data-ended="full"] #ended-full, body.-closed[data-ended="lost"] #ended-lost,
      body.-closed[data-ended="budget"] #ended-budget { display: block; }
"""

ON_SCREEN_KEYS = (
    ("Esc", "\x1b", "Esc: back, close a dialog"),
    ("Tab", "\t", "Tab: next field"),
    ("⇧Tab", "\x1b[Z", "Shift+Tab: previous field"),
    ("↑", "\x1b[A", "Up"),
    ("↓", "\x1b[B", "Down"),
    ("←", "\x1b[D", "Left"),
    ("→", "\x1b[C", "Right"),
    ("Enter", "\r", "Enter"),
    ("F2 Help", "\x1bOQ", "F2: help"),
    ("F4", "\x1bOS", "F4: command palette"),
    ("F8 Save", "\x1b[19~", "F8: save the answers"),
    ("F9 Next", "\x1b[20~", "F9: next step"),
)
"""The on-screen keys (label, what the terminal sends, title): a phone's keyboard has none of them."""

WIZARD_PAGE = Template(
    """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content">
    <title>gpu-wizard (demo cluster)</title>
    <link rel="stylesheet" href="${static}css/xterm.css">
    <style>"""
    + _STYLE
    + """    </style>
    <script src="${static}classroom/classroom.js"></script>
    <script src="${static}js/textual.js"></script>
  </head>
  <body>
    <div class="wizard">
      <div id="terminal" class="textual-terminal" data-session-websocket-url="${websocket}" data-font-size="${font_size}" data-fit="${fit}"></div>
      <div id="keys" role="toolbar" aria-label="keys">${keys}</div>
    </div>
    <div class="ended" id="ended-ended"><div class="notice">
      <h1>Session ended</h1>
      <p>The wizard and its demo cluster have stopped; nothing of this session was kept.</p>
      <p><a href="${home}">Start a new session</a></p>
    </div></div>
    <div class="ended" id="ended-moved"><div class="notice">
      <h1>This session is open in another tab</h1>
      <p>Your wizard moved to the tab that opened it last; it is the same session.</p>
      <p><a href="${home}">Use it in this tab</a></p>
    </div></div>
    <div class="ended" id="ended-full"><div class="notice">
      <h1>The classroom is full</h1>
      <p>Every session place of this server is taken. A place frees up when someone closes their tab
      (after ${grace_text}); or ask your trainer to raise --max-sessions.</p>
      <p><a href="${home}">Try again</a></p>
    </div></div>
    <div class="ended" id="ended-too-many"><div class="notice">
      <h1>Too many sessions from this address</h1>
      <p>Sessions already open from your address hold as many places as one client may have. Close one
      (or ask your trainer: --max-per-client).</p>
      <p><a href="${home}">Try again</a></p>
    </div></div>
    <div class="ended" id="ended-budget"><div class="notice">
      <h1>Session ended: it used more than its share</h1>
      <p>This session used more of the server's processor or memory than one student's share, so it was
      stopped to keep the classroom fast for everyone; the trainer's console says so too.</p>
      <p><a href="${home}">Start a new session</a></p>
    </div></div>
    <div class="ended" id="ended-failed"><div class="notice">
      <h1>The session did not start</h1>
      <p>The wizard could not be started for this tab; the trainer's console says why.</p>
      <p><a href="${home}">Try again</a></p>
    </div></div>
    <div class="ended" id="ended-lost"><div class="notice">
      <h1>Disconnected</h1>
      <p>The connection to the classroom server was lost. Your session is kept for ${grace_text}:
      reconnect to continue where you were (an apply in progress goes on meanwhile).</p>
      <p><a href="${home}">Reconnect</a></p>
    </div></div>
  </body>
</html>
"""
)

NOTICE_PAGE = Template(
    """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>gpu-wizard: ${title}</title>
    <style>"""
    + _STYLE
    + """    </style>
  </head>
  <body>
    <div class="notice">
      <h1>${title}</h1>
      ${body}
    </div>
  </body>
</html>
"""
)


def wizard_page(*, static: str, websocket: str, home: str, font_size: int, fit: bool, grace: int) -> str:
    """The page that runs the wizard in the browser (``fit``: no font size was asked for)."""
    keys = "".join(
        f'<button type="button" tabindex="-1" title="{html.escape(title)}" '
        f'data-keys="{html.escape(json.dumps(sequence))}">{html.escape(label)}</button>'
        for label, sequence, title in ON_SCREEN_KEYS
    )
    minutes = max(1, round(grace / 60))
    grace_text = f"{minutes} minute{'s' if minutes != 1 else ''}" if grace >= 60 else f"{grace} seconds"
    return WIZARD_PAGE.substitute(
        static=html.escape(static),
        websocket=html.escape(websocket),
        home=html.escape(home),
        font_size=font_size,
        fit="true" if fit else "false",
        keys=keys,
        grace_text=grace_text,
    )


def notice_page(title: str, *paragraphs: str, static: str) -> str:
    """A page that only says something (each paragraph is plain text, escaped here)."""
    body = "\n      ".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return NOTICE_PAGE.substitute(title=html.escape(title), body=body, static=html.escape(static))


def forbidden_page(static: str) -> str:
    """403: no valid token and no session cookie."""
    return notice_page(
        "Open the link your trainer shared",
        "This classroom server only opens for its own link: the address with ?token=… that it printed "
        "when it started. Ask your trainer for it and open it in this browser.",
        static=static,
    )


def full_page(limit: int, static: str) -> str:
    """503: every session place is taken."""
    return notice_page(
        "The classroom is full",
        f"All {limit} sessions of this server are in use: each student's browser tab runs its own demo "
        "cluster, and this machine is set up for at most that many at once.",
        "Try again in a minute (a place frees up when someone closes their tab), or ask your trainer to "
        "raise --max-sessions.",
        static=static,
    )
