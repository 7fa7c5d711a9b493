"""The HTML the classroom server sends: the wizard's page, and the pages that say no (403, full).

The wizard's page is a terminal element for ``textual.js`` (shipped by PyPI's ``textual-serve``, served
from that package's static folder): it opens the websocket named in ``data-session-websocket-url``
and draws what the app sends. No inline script and no third-party font or script: the page works
offline and under a strict Content-Security-Policy.
"""

from __future__ import annotations

import html
from string import Template

_STYLE = """
      @font-face { font-family: "Roboto Mono"; src: url("${static}fonts/RobotoMono-VariableFont_wght.ttf"); }
      body { margin: 0; background: #0c181f; color: rgba(255, 255, 255, 0.95);
             font-family: "Roboto Mono", menlo, monospace; }
      .notice { max-width: 44em; margin: 12vh auto; padding: 2em; background: #12232d; line-height: 1.5; }
      .notice h1 { font-size: 1.3em; margin-top: 0; }
      .notice a { color: #8fd3ff; }
      .textual-terminal { width: 100vw; height: 100vh; }
      .ended { display: none; position: fixed; inset: 0; background: rgba(12, 24, 31, 0.92); }
      body.-closed .ended { display: block; }
"""

WIZARD_PAGE = Template(
    """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>gpu-wizard (demo cluster)</title>
    <link rel="stylesheet" href="${static}css/xterm.css">
    <style>"""
    + _STYLE
    + """    </style>
    <script src="${static}js/textual.js"></script>
  </head>
  <body>
    <div id="terminal" class="textual-terminal" data-session-websocket-url="${websocket}" data-font-size="${font_size}"></div>
    <div class="ended">
      <div class="notice">
        <h1>Session ended</h1>
        <p>The wizard and its demo cluster have stopped; nothing of this session was kept.</p>
        <p><a href="${home}">Start a new session</a></p>
      </div>
    </div>
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


def wizard_page(*, static: str, websocket: str, home: str, font_size: int) -> str:
    """The page that runs the wizard in the browser."""
    return WIZARD_PAGE.substitute(
        static=html.escape(static), websocket=html.escape(websocket), home=html.escape(home), font_size=font_size
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
