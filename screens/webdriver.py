"""The driver of a classroom session (``gpu-wizard serve``): Textual's web driver that quits with its server.

``wizard.web.sessions`` starts the app with ``TEXTUAL_DRIVER`` naming :class:`ClassroomWebDriver`.
Textual's own web driver stops reading when its stdin closes but leaves the app running; here the
app quits, so a server that is killed (no chance to end its sessions) leaves no app behind: the
kernel closes the pipe, the app stops its demo cluster and exits.
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
