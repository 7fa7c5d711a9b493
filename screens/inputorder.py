"""Keys and pastes reach the field shown focused, however fast they come and however busy the machine.

Textual hands a key to the widget focused *when the App reads the key* (``App.on_event`` posts it to
that widget's queue). Tab does not move the focus there: the key climbs from the focused field to the
screen, one widget's queue after another, and only then does the App run its ``focus_next`` binding.
Keys read in between (typed in a burst, or a terminal's bracketed paste right after Tab) had already
been posted to the field being left: "Image name: nvidia-driverregcred" with "Pull secrets" empty and
focused. A loaded machine stretches that climb, so typing at 15-30 ms a key lost characters the same
way. A step being left (Ctrl+N, Esc) had the same hole: keys typed before the next step was up landed
in a form whose answers were already taken.

:class:`InputOrder` keeps the terminal's order: a key or paste is posted to the focused widget, and the
next one waits until the first has been handled all the way up, known by a :class:`InputSettled`
message posted right behind it to the same widget (a message climbs the same queues in the same
order, so it reaches the App after the key). Keys also wait while a step is being left, and go to the
next step once it is shown. A wait never outlasts :data:`GIVE_UP_S`: a widget removed with the marker
in its queue must not swallow the keyboard.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App
from textual.message import Message
from textual.widget import Widget

#: The longest a key waits for the one before it (a marker lost with its widget); then it goes on as usual.
GIVE_UP_S = 5.0
#: How often held keys look whether what they wait for is gone (the widget holding the marker removed).
CHECK_S = 0.25

HELD_EVENTS = (events.Key, events.Paste)
"""Input whose target is the focused widget (a mouse event's target is under the pointer, focused at once)."""


class InputSettled(Message):
    """Posted behind a key to the widget it went to: it reaches the App once the key has been handled.

    ``token`` names the key waited for (None: only look again whether held keys may go now).
    """

    def __init__(self, token: object | None) -> None:
        self.token = token
        super().__init__()


class InputOrder:
    """One app's keyboard queue: one key or paste in flight at a time, none while a step is being left."""

    def __init__(self, app: App[Any], deliver: Callable[[events.Event], Awaitable[None]]) -> None:
        self._app = app
        self._deliver = deliver
        """Textual's own handling of an input event (the App's ``on_event``)."""
        self._held: deque[tuple[events.Event, float]] = deque()
        self._waiting: object | None = None
        """The key in flight (its marker's token), if any."""
        self._target: Widget | None = None
        """The widget the key in flight went to."""
        self._checking = False

    @property
    def busy(self) -> bool:
        """A key is in flight or held."""
        return bool(self._held) or self._waiting is not None

    def hold(self, event: events.Event) -> bool:
        """Keep ``event`` for later when an earlier key is still in flight or a step is being left."""
        if not isinstance(event, HELD_EVENTS) or event.is_forwarded:
            return False
        if not self._held and not self._closed():
            return False
        self._held.append((event, time.monotonic()))
        self._schedule_check()
        return True

    def delivered(self, event: events.Event) -> None:
        """After the App handled a fresh key or paste: if it went to a widget, wait for it to be handled."""
        if not isinstance(event, HELD_EVENTS) or not event.is_forwarded:
            return  # a priority binding took it (Ctrl+Q): handled already
        target = self._app.focused or self._app.screen
        token = object()
        if target.post_message(InputSettled(token)):
            self._waiting, self._target = token, target

    async def settled(self, message: InputSettled) -> None:
        """A marker came back (or a look again was asked for): deliver held keys while nothing is in flight."""
        message.stop()
        if message.token is not None and message.token is self._waiting:
            self._waiting = self._target = None
        while self._held:
            event, since = self._held[0]
            if self._closed() and time.monotonic() - since < GIVE_UP_S:
                return
            self._held.popleft()
            self._waiting = self._target = None  # given up on, if it was still awaited
            await self._deliver(event)
            self.delivered(event)

    def release(self) -> None:
        """A step has been shown: the keys held while the one before was left may go (in order, after this)."""
        if self._held:
            self._app.post_message(InputSettled(None))

    def _closed(self) -> bool:
        if self._waiting is not None:
            target = self._target
            if target is not None and not target.is_attached:  # removed with the marker in its queue
                self._waiting = self._target = None
            else:
                return True
        return bool(getattr(self._app.screen, "leaving", False))

    def _schedule_check(self) -> None:
        if not self._checking:
            self._checking = True
            self._app.set_timer(CHECK_S, self._check)

    def _check(self) -> None:
        self._checking = False
        if self._held:
            self._app.post_message(InputSettled(None))
            self._schedule_check()
