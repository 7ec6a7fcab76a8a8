"""``agentloop.secrets``: what is redacted, what is left alone, and that the fast path (a text
holding no hint of a key shape skips the pattern) never skips a key."""

from __future__ import annotations

import json
from urllib.parse import quote

from hypothesis import given, settings, strategies as st

from agentloop._redaction import _SHAPE_HINTS, _SHAPES
from agentloop.secrets import redact, redact_bytes, register_secret

PIECES = ["sk-", "sk-ant-", "AKIA", "ASIA", "AIza", "gsk_", "ghp_", "github_pat_", "xai-",
          "Bearer ", "bearer\t", "ABCDEFGHIJKLMNOP", "abc123", "-", "_", " ", "\n", "=", "…"]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=20).map("".join))
def test_the_shape_hints_cover_every_shape(text: str) -> None:
    if _SHAPES.search(text):
        assert any(hint in text for hint in _SHAPE_HINTS)


def test_a_registered_secret_is_redacted_in_every_form() -> None:
    secret = "my-service/token+with=odd\\chars"
    register_secret(secret)
    forms = [secret, repr(secret), json.dumps(secret), quote(secret, safe=""), secret[:-6] + "…"]
    for form in forms:
        clean = redact(f"echo: {form}")
        assert "token" not in clean and "token%2Bwith" not in clean, (form, clean)
    assert redact_bytes(b"nothing here") == b"nothing here"


def test_short_values_are_not_registered() -> None:
    register_secret("abc")
    assert redact("abc abc") == "abc abc"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefgh ,.\n0123", max_size=200))
def test_text_without_keys_is_left_alone(text: str) -> None:
    assert redact(text) == text
