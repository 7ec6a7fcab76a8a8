"""An MCP server asks the user something (elicitation): a form, or a page to visit.

**Form mode**: one field per property of the request's schema (a flat JSON Schema object):
text, a number, a yes/no box, or a choice for an ``enum``; each prefilled with its default,
marked ``*`` when required, its description below it. Ctrl+S or the Accept button sends it
(values converted to the property's type; a required field left empty, or a number that is
not one, is said and nothing is sent); Decline says no; Escape cancels.

**URL mode**: the server wants the user to visit a page (a sign-in, a payment) out of band.
The dialog shows the whole address, its host in bold, so the user sees where it leads; Open
accepts and opens it in the browser, Copy copies it, Decline says no, Escape cancels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import ComposeResult
    from textual.widget import Widget

    from agentloop_mcp import ElicitationRequest, ElicitationResponse  # noqa: F401

__all__ = ["ElicitationScreen", "form_values"]


def _fields(schema: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    properties = (schema or {}).get("properties")
    if not isinstance(properties, dict):
        return []
    return [(name, p) for name, p in properties.items() if isinstance(p, dict)]


def form_values(
    schema: dict[str, Any] | None, raw: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The form's values in their schema types, and what is wrong with them.

    ``raw`` holds what the widgets hold (text, a bool, a choice); an empty text field is left
    out (the schema's default, if any, fills it in).
    """
    required = set((schema or {}).get("required") or [])
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, prop in _fields(schema):
        value = raw.get(name)
        kind = prop.get("type")
        if isinstance(value, str):
            value = value.strip()
            if not value:
                if name in required and "default" not in prop:
                    problems.append(f"{prop.get('title') or name} is required")
                continue
            if kind == "integer":
                try:
                    value = int(value)
                except ValueError:
                    problems.append(f"{prop.get('title') or name} must be a whole number")
                    continue
            elif kind == "number":
                try:
                    value = float(value)
                except ValueError:
                    problems.append(f"{prop.get('title') or name} must be a number")
                    continue
        elif value is None:
            if name in required and "default" not in prop:
                problems.append(f"{prop.get('title') or name} is required")
            continue
        values[name] = value
    return values, problems


class ElicitationScreen(ModalScreen["ElicitationResponse"]):
    """A server's question, as a form or a link (see the module docs).

    Args:
        request: what the server asks.
        open_url: opens a page in the user's browser.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "accept", "Accept", priority=True),
    ]

    def __init__(self, request: ElicitationRequest, *, open_url: Callable[[str], object]) -> None:
        super().__init__(classes="elicitation")
        self.request = request
        self.open_url = open_url
        self.inputs: dict[str, Widget] = {}

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Label(
                Text.assemble((request.server, "bold"), " asks: ", request.message),
                id="question",
            )
            if request.mode == "url":
                yield Static(self._address(), id="url")
                with Horizontal(id="buttons"):
                    yield Button("Open in the browser", id="accept", variant="success")
                    yield Button("Copy the link", id="copy")
                    yield Button("Decline", id="decline", variant="error")
                return
            with VerticalScroll(id="details"):
                yield from self._form()
            with Horizontal(id="buttons"):
                yield Button("Accept (Ctrl+S)", id="accept", variant="success")
                yield Button("Decline", id="decline", variant="error")
                yield Button("Cancel (Esc)", id="cancel")

    def _address(self) -> Text:
        url = self.request.url or ""
        host = urlsplit(url).hostname or ""
        start = url.find(host) if host else -1
        shown = Text(url)
        if start >= 0:
            shown.stylize("bold underline", start, start + len(host))
        return Text.assemble("It wants you to visit:\n", shown)

    def _form(self) -> ComposeResult:
        schema = self.request.schema
        required = set((schema or {}).get("required") or [])
        defaults = self.request.defaults
        for name, prop in _fields(schema):
            title = str(prop.get("title") or name) + (" *" if name in required else "")
            yield Label(Text(title, style="bold"))
            default = defaults.get(name, prop.get("default"))
            widget: Widget
            if isinstance(prop.get("enum"), list):
                options = [(str(v), v) for v in prop["enum"]]
                widget = Select(options, value=default if default in prop["enum"] else Select.NULL)
            elif prop.get("type") == "boolean":
                widget = Checkbox(str(prop.get("description") or title), value=bool(default))
            else:
                kind = {"integer": "integer", "number": "number"}.get(str(prop.get("type")), "text")
                value = "" if default is None else str(default)
                widget = Input(value, type=kind, placeholder=str(prop.get("description") or ""))  # type: ignore[arg-type]
            self.inputs[name] = widget
            yield widget
            if prop.get("description") and prop.get("type") != "boolean":
                yield Static(Text(str(prop["description"]), style="dim"))

    def on_mount(self) -> None:
        if self.inputs:
            next(iter(self.inputs.values())).focus()

    def _raw(self) -> dict[str, Any]:
        raw: dict[str, Any] = {}
        for name, widget in self.inputs.items():
            if isinstance(widget, Select):
                raw[name] = None if widget.value is Select.NULL else widget.value
            elif isinstance(widget, Checkbox):
                raw[name] = widget.value
            elif isinstance(widget, Input):
                raw[name] = widget.value
        return raw

    def on_button_pressed(self, event: Button.Pressed) -> None:
        button = event.button.id
        if button == "accept":
            self.action_accept()
        elif button == "copy":
            self.app.copy_to_clipboard(self.request.url or "")
            self.notify("copied the link", timeout=2)
        elif button == "decline":
            self._answer("decline")
        else:
            self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_accept()

    def action_accept(self) -> None:
        if self.request.mode == "url":
            if self.request.url:
                self.open_url(self.request.url)
            self._answer("accept")
            return
        values, problems = form_values(self.request.schema, self._raw())
        if problems:
            self.notify("; ".join(problems), severity="error")
            return
        self._answer("accept", values)

    def action_cancel(self) -> None:
        self._answer("cancel")

    def _answer(self, action: str, content: dict[str, Any] | None = None) -> None:
        from agentloop_mcp import ElicitationResponse

        if action == "accept":
            self.dismiss(ElicitationResponse.accept(content))
        elif action == "decline":
            self.dismiss(ElicitationResponse.decline("the user declined"))
        else:
            self.dismiss(ElicitationResponse.cancel())
