"""The first-run wizard: no model is configured, so ask for one.

Three kinds of model are offered: a **cloud provider** (a model id and an API key), a **local
server** speaking the OpenAI API (Ollama, llama.cpp's ``llama-server``, LM Studio, vLLM: a
model id and the server's base URL, no key) and the **in-process local model** (a GGUF model
shipped in a PyPI package, run by llama.cpp in this process: no server, no key). The last is
listed only as what is installed says: without the ``[local]`` extra the wizard says how to
install it; without a model package, which one to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

import msgspec
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from agentloop_coding import PREFERRED_PROVIDERS

if TYPE_CHECKING:
    from textual.app import ComposeResult

__all__ = [
    "CLOUD_PROVIDERS",
    "LOCAL_SERVERS",
    "Choice",
    "Setup",
    "SetupScreen",
    "choices",
]

CLOUD_PROVIDERS = PREFERRED_PROVIDERS
"""The cloud providers offered, in the order the coding agent prefers their keys."""
"""The cloud providers offered, in the order ``agentloop_coding.default_model`` prefers them."""
LOCAL_SERVERS = ("ollama", "llamacpp", "lmstudio", "vllm", "llamacpp_python")
"""The local OpenAI-compatible servers offered (presets without a key)."""
IN_PROCESS = "local"
"""The provider name of in-process models (``local:smollm2``)."""
INSTALL_RUNTIME = 'pip install "anyio-agentloop[local]"'


class Setup(msgspec.Struct, frozen=True, kw_only=True):
    """What the wizard asked: a provider, its model, a key or a base URL, whether to remember.

    Attributes:
        provider: the provider preset (``openai``, ``ollama``, ``local``, ...).
        model: the model id at that provider.
        api_key: the key (cloud providers).
        base_url: where the server listens (local servers); empty: the preset's default.
        remember: keep the model in the configuration file, and the key in the keyring.
    """

    provider: str
    model: str
    api_key: str = ""
    base_url: str = ""
    remember: bool = False

    @property
    def model_string(self) -> str:
        return f"{self.provider}:{self.model}"


class Choice(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of the wizard's provider list.

    Attributes:
        provider: the preset name (``local`` for in-process models).
        label: what the list shows.
        kind: ``cloud``, ``server`` or ``in-process``.
        model: the model id offered first.
        key_variable: the API key's environment variable (cloud).
        base_url: the server's default address (servers).
        models: the model ids to choose from (in-process: the installed packages).
        note: what the user should know (how to install what is missing).
    """

    provider: str
    label: str
    kind: Literal["cloud", "server", "in-process"]
    model: str = ""
    key_variable: str = ""
    base_url: str = ""
    models: list[str] = []
    note: str = ""


def _in_process() -> Choice:
    try:
        from agentloop_local import available_models, runtime_available
    except ImportError:  # agentloop_local itself is not installed
        return Choice(
            provider=IN_PROCESS,
            label="in-process model (no server, no key)",
            kind="in-process",
            note=f"needs the [local] extra: {INSTALL_RUNTIME}",
        )
    found = available_models()
    installed = [entry for entry in found if entry.installed]
    note = ""
    if not runtime_available():
        note = f"needs the [local] extra: {INSTALL_RUNTIME}"
    elif not installed and found:
        note = f"no model package is installed: {found[0].preset.install}"
    models = [entry.model_string.partition(":")[2] for entry in installed]
    return Choice(
        provider=IN_PROCESS,
        label="in-process model (no server, no key)",
        kind="in-process",
        model=models[0] if models else "",
        models=models,
        note=note,
    )


def choices() -> list[Choice]:
    """What the wizard offers: cloud providers, local servers, the in-process model."""
    from agentloop_providers import get_preset

    listed = []
    for name in CLOUD_PROVIDERS:
        preset = get_preset(name)
        listed.append(
            Choice(
                provider=name,
                label=name,
                kind="cloud",
                model=preset.default_model,
                key_variable=preset.api_key_env or "",
            )
        )
    for name in LOCAL_SERVERS:
        preset = get_preset(name)
        listed.append(
            Choice(
                provider=name,
                label=f"{name} (local server)",
                kind="server",
                model=preset.default_model,
                base_url=preset.base_url,
            )
        )
    listed.append(_in_process())
    return listed


class SetupScreen(ModalScreen[Setup | None]):
    """The first-run wizard (see the module docs).

    The key is used by this process (and kept in the system keyring when asked to remember
    and the ``keyring`` package is installed); it is never written to a file.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Quit")]

    def __init__(self, offered: list[Choice] | None = None) -> None:
        super().__init__()
        self.offered = offered if offered is not None else choices()
        self.by_provider = {choice.provider: choice for choice in self.offered}

    def compose(self) -> ComposeResult:
        first = self.offered[0]
        # Scrolls on a small terminal, to whichever field has the focus.
        with VerticalScroll(id="dialog"):
            yield Label("Welcome to agentloop. Choose a model to start.", id="question")
            yield Select(
                [(c.label, c.provider) for c in self.offered], value=first.provider, id="provider"
            )
            yield Input(first.model, placeholder="model id", id="model")
            yield Select([], id="local-model", prompt="installed models")
            yield Input(placeholder="API key", password=True, id="key")
            yield Input(placeholder="base URL", id="base-url")
            yield Static("", id="note", markup=False)
            yield Checkbox("Remember the model (config file) and key (keyring)", id="remember")
            with Horizontal(id="buttons"):
                yield Button("Start", id="start", variant="success")
                yield Button("Quit", id="quit")

    def on_mount(self) -> None:
        self._show(self.offered[0])

    def _show(self, choice: Choice) -> None:
        model = self.query_one("#model", Input)
        local = self.query_one("#local-model", Select)
        key = self.query_one("#key", Input)
        base = self.query_one("#base-url", Input)
        note = self.query_one("#note", Static)
        model.display = choice.kind != "in-process"
        model.value = choice.model
        local.display = choice.kind == "in-process" and bool(choice.models)
        if choice.models:
            local.set_options([(m, m) for m in choice.models])
            local.value = choice.models[0]
        key.display = choice.kind == "cloud"
        key.placeholder = f"API key ({choice.key_variable})"
        base.display = choice.kind == "server"
        base.value = choice.base_url
        note.update(choice.note)
        note.display = bool(choice.note)
        self.query_one("#start", Button).disabled = choice.kind == "in-process" and not (
            choice.models and not choice.note
        )

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "provider":
            choice = self.by_provider.get(str(event.value))
            if choice is not None:
                self._show(choice)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "quit":
            self.dismiss(None)
        else:
            self._start()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.query_one("#start", Button).disabled:
            self._start()  # Enter in a field: what Start does

    def _start(self) -> None:
        choice = self.by_provider[str(self.query_one("#provider", Select).value)]
        if choice.kind == "in-process":
            model = str(self.query_one("#local-model", Select).value)
        else:
            model = self.query_one("#model", Input).value.strip()
        if not model or model == str(Select.NULL):
            self.notify("the model id is empty", severity="error")
            return
        base_url = self.query_one("#base-url", Input).value.strip()
        self.dismiss(
            Setup(
                provider=choice.provider,
                model=model,
                api_key=self.query_one("#key", Input).value.strip(),
                base_url=base_url
                if choice.kind == "server" and base_url != choice.base_url
                else "",
                remember=self.query_one("#remember", Checkbox).value,
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)
