"""The driver of a classroom session (``gpu-wizard serve``): Textual's web driver that quits with its server.

``wizard.web.sessions`` starts the app with ``TEXTUAL_DRIVER`` naming :class:`ClassroomWebDriver`.
Textual's own web driver stops reading when its stdin closes but leaves the app running; here the
app quits, so a server that is killed (no chance to end its sessions) leaves no app behind: the
kernel closes the pipe, the app stops its demo cluster and exits. A ``repaint`` meta from the server
(a browser that reattaches to its session after a reload) repaints the whole screen: a resize to the
same size repaints only what changed, and the new tab's terminal starts blank.
"""

from __future__ import annotations

from textual import messages
from textual.drivers.web_driver import WebDriver


class ClassroomWebDriver(WebDriver):
    """:class:`~textual.drivers.web_driver.WebDriver`, plus: end of input from the server ends the app."""

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # input ended while the app runs: the server is gone
            self._app.post_message(messages.ExitApp())

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "repaint":
            self._app.call_later(self._app.refresh, layout=True)  # (thread-safe: it posts a message)
            return
        super().on_meta(packet_type, payload)
