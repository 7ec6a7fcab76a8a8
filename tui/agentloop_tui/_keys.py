"""The keyboard as terminals send it, and which keys this terminal can tell apart.

A terminal sends Enter as a carriage return, and in its legacy encoding Shift+Enter the same
way: the app cannot tell them apart, and Shift+Enter would send a half-written prompt. Two
extensions make modified keys distinct, and the app asks for both on start:

==========================  ===========================  ======================================
encoding                    who speaks it                Shift+Enter / Alt+Enter / Ctrl+J
==========================  ===========================  ======================================
kitty keyboard protocol     kitty, WezTerm, foot,        ``CSI 13;2u`` / ``CSI 13;3u`` /
(``CSI > flags u``)         Ghostty, iTerm2 (opt-in)     ``CSI 106;5u``
xterm modifyOtherKeys       xterm, tmux with             ``CSI 27;2;13~`` / ``CSI 27;3;13~`` /
(``CSI > 4;1 m``)           ``extended-keys on``         ``CSI 27;5;106~``
legacy                      everything else (tmux by     ``CR`` (= Enter) / ``ESC CR`` /
                            default, screen, iTerm2's    ``LF``
                            default, Terminal.app)
==========================  ===========================  ======================================

Textual reads the kitty encoding itself; ``KeyParser`` adds the other two (Textual 8 names
xterm's Shift+Enter ``shift+\\r``, drops the Alt of ``CSI 27;3;13~`` and of ``ESC CR``). Ctrl+J
arrives as a line feed in every encoding, so it is the newline key that always works.

Which one the terminal speaks is learnt as it answers: the kitty protocol's query
(``CSI ? u``) is answered with the flags in force, xterm's ``CSI ? 4 m`` with the
modifyOtherKeys level, and any key in either encoding proves it too (tmux answers neither
query but sends the keys). Each is told to the app once, as a ``KeyboardReport``, so that it
shows the newline key that works here (``newline_key``).

The drivers are Textual's, with this parser and the requests added: Textual 8 builds its
parser inside the input thread, so that loop is repeated here (``_read_input``).
"""

from __future__ import annotations

import os
import re
import selectors
from codecs import getincrementaldecoder
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from textual import events
from textual._loop import loop_last
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.drivers.linux_inline_driver import LinuxInlineDriver
from textual.keys import Keys
from textual.message import Message

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "ENHANCE",
    "InlineKeyboardDriver",
    "KeyParser",
    "Keyboard",
    "KeyboardDriver",
    "KeyboardReport",
    "RESTORE",
    "newline_key",
]

Keyboard: TypeAlias = Literal["legacy", "kitty", "modifyOtherKeys"]

ENHANCE = "\x1b[>4;1m\x1b[?u\x1b[?4m"
"""Sent on start: modifyOtherKeys on (level 1), then the two queries (kitty flags, xterm
modifyOtherKeys level). Terminals ignore what they do not know. Textual asks for the kitty
protocol itself."""
RESTORE = "\x1b[>4m"
"""Sent on stop: modifyOtherKeys back to the terminal's own setting."""

_MODIFY_OTHER_KEYS = re.compile(r"\x1b\[27;(\d{1,3});(\d{1,7})~")
_KITTY_KEY = re.compile(r"\x1b\[\d{1,7}(?::\d*)*(?:;[\d:]*){0,2}u")
_KITTY_REPLY = re.compile(r"\x1b\[\?(\d{1,3})u")
_MODKEYS_REPLY = re.compile(r"\x1b\[>4;?(\d{0,3})m")
_LEGACY_ALT_ENTER = ("\x1b\r", "\x1b\n")


def newline_key(keyboard: Keyboard) -> str:
    """The key that adds a line to the prompt in a terminal speaking ``keyboard``."""
    return "Ctrl+J" if keyboard == "legacy" else "Shift+Enter"


class KeyboardReport(Message):
    """The terminal speaks ``keyboard`` (it answered a query, or sent a key in it).

    Attributes:
        keyboard: ``"kitty"`` or ``"modifyOtherKeys"``.
    """

    def __init__(self, keyboard: Keyboard) -> None:
        super().__init__()
        self.keyboard = keyboard


class KeyParser(XTermParser):
    """Textual's parser, reading xterm's modifyOtherKeys keys and legacy Alt+Enter too.

    Args:
        debug: log what is read (Textual's ``keys.log``).
        report: told each encoding the terminal proves it speaks, once each.
    """

    def __init__(
        self, debug: bool = False, report: Callable[[Keyboard], None] | None = None
    ) -> None:
        super().__init__(debug)
        self._report = report
        self._reported: set[str] = set()

    def _saw(self, keyboard: Keyboard) -> None:
        if keyboard not in self._reported:
            self._reported.add(keyboard)
            if self._report is not None:
                self._report(keyboard)

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        if sequence in _LEGACY_ALT_ENTER or (alt and sequence == "\r"):
            yield events.Key("alt+enter", None)
            return
        if len(sequence) > 3 and sequence[1] == "[":
            if match := _MODIFY_OTHER_KEYS.fullmatch(sequence):
                self._saw("modifyOtherKeys")
                modifiers, code = match.groups()
                character = chr(int(code)) if int(code) < 0x110000 else ""
                if modifiers == "2" and character.isprintable():
                    sequence = character  # Shift and a character (level 2): the character
                else:
                    # The same key in the kitty protocol's form, which Textual reads.
                    sequence = f"\x1b[{code};{modifiers}u"
            elif match := _KITTY_REPLY.fullmatch(sequence):
                self._saw("kitty")
                yield events.Key(Keys.Ignore, sequence)
                return
            elif match := _MODKEYS_REPLY.fullmatch(sequence):
                if match.group(1) not in ("", "0"):
                    self._saw("modifyOtherKeys")
                yield events.Key(Keys.Ignore, sequence)
                return
            elif _KITTY_KEY.fullmatch(sequence):
                self._saw("kitty")
        yield from super()._sequence_to_key_events(sequence, alt)


def _read_input(driver: Any, parser: XTermParser, process: Callable[[Message], None]) -> None:
    """Textual 8's input loop (``LinuxDriver.run_input_thread``), with ``parser``."""
    selector = selectors.SelectSelector()
    selector.register(driver.fileno, selectors.EVENT_READ)
    decode = getincrementaldecoder("utf-8")().decode

    def read(ready: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
        for last, (_key, mask) in loop_last(ready):
            if mask & selectors.EVENT_READ:
                data = decode(os.read(driver.fileno, 4096), final=final and last)
                if not data:
                    break  # standard input is a pipe that ended
                for event in parser.feed(data):
                    process(event)
        for event in parser.tick():
            process(event)

    try:
        while not driver.exit_event.is_set():
            read(selector.select(0.1))
        selector.unregister(driver.fileno)
        read(selector.select(0.1), final=True)
    finally:
        selector.close()
        try:
            for _event in parser.feed(""):
                pass
        except (EOFError, ParseError):
            pass


class KeyboardDriver(LinuxDriver):
    """Textual's full-screen driver asking for modifyOtherKeys and reading every encoding."""

    def start_application_mode(self) -> None:
        super().start_application_mode()  # type: ignore[no-untyped-call]
        self.write(ENHANCE)
        self.flush()

    def stop_application_mode(self) -> None:
        self.write(RESTORE)
        super().stop_application_mode()

    def run_input_thread(self) -> None:
        parser = KeyParser(self._debug, lambda keyboard: self._tell(keyboard))
        _read_input(self, parser, self.process_message)

    def _tell(self, keyboard: Keyboard) -> None:
        self.process_message(KeyboardReport(keyboard))


class InlineKeyboardDriver(LinuxInlineDriver):
    """Textual's inline driver asking for modifyOtherKeys and reading every encoding; it can
    step aside for an external editor, as the full-screen one can."""

    @property
    def can_suspend(self) -> bool:
        return True

    def start_application_mode(self) -> None:
        super().start_application_mode()
        self.write(ENHANCE)
        self.flush()  # type: ignore[no-untyped-call]

    def stop_application_mode(self) -> None:
        self.write(RESTORE)
        super().stop_application_mode()

    def run_input_thread(self) -> None:
        parser = KeyParser(self._debug, lambda keyboard: self._tell(keyboard))
        _read_input(self, parser, self._process)

    def _process(self, event: Message) -> None:
        if isinstance(event, events.CursorPosition):
            self.cursor_origin = (event.x, event.y)  # what the inline driver does with it
        else:
            self.process_message(event)

    def _tell(self, keyboard: Keyboard) -> None:
        self.process_message(KeyboardReport(keyboard))
