"""``PiiRedactor``: remove personal data and secrets from tool results before the model reads them.

A post-turn policy: it rewrites the text blocks of the turn's tool results and answers with a
``Replace`` verdict, so the redacted results are what gets committed and sent to the model. The
assistant message, non-text blocks and ``details`` (which providers never send) are left alone;
events emitted while the tools ran still carry the original results, for the application.

What is recognised, in this order (each kind replaced by ``[REDACTED:<kind>]``):

``secret``
    private key blocks (``-----BEGIN ... PRIVATE KEY-----``), OpenAI/Anthropic-style ``sk-...``
    keys, Stripe ``sk_live_``/``rk_``/``pk_`` keys, AWS access key ids (``AKIA``/``ASIA``...),
    GitHub tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack
    tokens (``xoxb-``, ``xoxp-``...), Google API keys (``AIza...``), GitLab tokens (``glpat-``),
    JSON Web Tokens, ``Bearer`` tokens, and any value of 16 or more token characters assigned
    to a key-ish name (``api_key=``, ``"secret": "..."``, ``PASSWORD:``; the name is kept).
``card``
    13 to 19 digits, optionally grouped by single spaces or dashes, passing the Luhn check.
``email``
    ``local@domain.tld`` addresses.
``phone``
    numbers written as phone numbers: a ``+`` country code, or at least ten digits in groups
    separated by spaces, dots or dashes, or with a parenthesised area code. Dates, IP
    addresses and thousands-grouped amounts are not taken for phone numbers.

Cost: linear in the length of the text, whatever it holds; the key-ish names and JSON Web
Tokens are found by small scanners rather than by patterns that backtrack. A megabyte of text
built to be slow (hyphen runs, UUID chains, digit groups) takes 0.1 to 0.5 s on a CI machine.
Results holding more than ``in_thread_above`` characters of text (64 KiB by default) are
redacted in a worker thread, so the event loop runs on meanwhile and an abort lands at once
(the abandoned pass finishes in its thread and is dropped); smaller ones, a millisecond or so
of work, on the loop's thread.

Known limits: these are patterns, not understanding. A bare run of digits is not a phone number
here; names, postal addresses and national identity numbers are not recognised; a random
16-digit identifier passes the Luhn check one time in ten and will be redacted as a card; a
secret with an unknown shape and no key-ish name next to it gets through. Add patterns with
``extra`` for what your tools return.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from agentloop import Text, ToolResultMessage
from agentloop.policy import CONTINUE, PolicyVerdict, Replace

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from agentloop import ContentBlock
    from agentloop.policy import PolicyContext

__all__ = ["PiiRedactor", "luhn_valid", "rewrite_results"]

_SECRET_PATTERNS = [
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
        re.DOTALL,
    ),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),
]
# The token after "Bearer", and the value after a key-ish name: only the value is redacted.
_BEARER = re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/\-]{16,}=*)")
# A key-ish name, found by its keyword; the name goes on to the end of its run of name
# characters, then an assignment, then the value (read by ``_keyish``, one piece at a time).
_KEYWORD = re.compile(
    r"(?i)api[_\-]?key|apikey|secret|token|passw(?:or)?d|passphrase|access[_\-]?key|"
    r"private[_\-]?key|auth|credentials?"
)
_NAME_REST = re.compile(r"[\w.\-]*")
_ASSIGN = re.compile(r"[\"']?\s*[:=]\s*[\"']?")
_VALUE = re.compile(r"[A-Za-z0-9+/_\-.~=]{16,}")
# A JSON Web Token: three dot-separated base64url runs, the first two starting "eyJ".
_JWT_START = re.compile(r"\beyJ")
_B64URL = re.compile(r"[A-Za-z0-9_\-]*")
_CARD = re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d])")
_EMAIL = re.compile(
    r"(?<![\w.%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}\b"
)
_PHONE = re.compile(
    r"(?<![\w+.\-])(?:\+\d{7,15}|(?:\+\d{1,3}[\s.\-]?)?(?:\(\d{1,4}\)[\s.\-]?)?\d{2,5}"
    r"(?:[\s.\-]\d{2,5}){0,4})(?![\w.\-]*\d)"
)
_DATE = re.compile(r"^\d{4}[\-./]\d{1,2}[\-./]\d{1,2}$|^\d{1,2}[\-./]\d{1,2}[\-./]\d{2,4}$")
_DOTTED_QUAD = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_THOUSANDS = re.compile(r"^\d{1,3}(?:[ ,.]\d{3})+$")


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn checksum used by payment card numbers."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _is_card(candidate: str) -> bool:
    digits = re.sub(r"[ \-]", "", candidate)
    if not 13 <= len(digits) <= 19:
        return False
    # Mixed separators ("1234 5678-9012") are not how cards are written.
    if " " in candidate and "-" in candidate:
        return False
    return luhn_valid(digits)


def _is_phone(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate)
    if candidate.startswith("+"):
        return 8 <= digits <= 15
    if not 10 <= digits <= 15:
        return False
    if "(" not in candidate and not re.search(r"[\s.\-]", candidate):
        return False  # a bare run of digits: an id, an amount, a timestamp...
    return not (
        _DATE.match(candidate) or _DOTTED_QUAD.match(candidate) or _THOUSANDS.match(candidate)
    )


def _keyish(text: str, replacement: str) -> str:
    """``text`` with the value after every key-ish name replaced (the name is kept).

    What ``name[:=]value`` with a lazy name prefix would match, found in linear time: each
    keyword found reads its name to the end of the run, and the search goes on from there (a
    regular expression retrying from every position of a long run of name characters is
    quadratic, and was: 385 s for ``"a-" * 40000``).
    """
    out: list[str] = []
    done = pos = 0
    while (keyword := _KEYWORD.search(text, pos)) is not None:
        name_end = _NAME_REST.match(text, keyword.end()).end()  # type: ignore[union-attr]
        assign = _ASSIGN.match(text, name_end)
        value = _VALUE.match(text, assign.end()) if assign is not None else None
        if value is None:
            pos = name_end  # any other keyword in this name ends at the same place
            continue
        out.append(text[done : value.start()])
        out.append(replacement)
        done = pos = value.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _jwt(text: str, replacement: str) -> str:
    """``text`` with every JSON Web Token replaced, in linear time.

    Each ``eyJ`` that starts a word is read segment by segment; a failed attempt moves the
    search past the run of token characters it read, since any other ``eyJ`` inside that run
    would read the same segments to the same failure.
    """
    out: list[str] = []
    done = pos = 0
    while (start := _JWT_START.search(text, pos)) is not None:
        end = _jwt_end(text, start.start())
        if end is None:
            pos = _B64URL.match(text, start.end()).end()  # type: ignore[union-attr]
            pos = max(pos, start.end())
            continue
        out.append(text[done : start.start()])
        out.append(replacement)
        done = pos = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _jwt_end(text: str, start: int) -> int | None:
    """Where the token starting at ``start`` ends, if one does."""
    pos = start
    for index in range(3):
        if index and not text.startswith(".", pos):
            return None
        pos += 1 if index else 0
        if index < 2 and not text.startswith("eyJ", pos):
            return None
        segment = _B64URL.match(text, pos).end()  # type: ignore[union-attr]
        if segment - pos < (11 if index < 2 else 8):  # "eyJ" and 8 more, or 8
            return None
        pos = segment
    return pos


def rewrite_results(
    results: Sequence[ToolResultMessage], rewrite: Callable[[str], str]
) -> list[ToolResultMessage] | None:
    """Apply ``rewrite`` to every text block of ``results``.

    Returns the new results, answering the same calls in the same order (every other field and
    block kept as it was), or ``None`` when no text changed: the caller then has nothing to
    replace.
    """
    out: list[ToolResultMessage] = []
    changed = False
    for result in results:
        content: list[ContentBlock] | None = None
        for index, block in enumerate(result.content):
            if type(block) is not Text:
                continue
            new = rewrite(block.text)
            if new != block.text:
                if content is None:
                    content = list(result.content)
                content[index] = Text(text=new)
        if content is None:
            out.append(result)
        else:
            changed = True
            fields = {name: getattr(result, name) for name in result.__struct_fields__}
            fields["content"] = content
            out.append(ToolResultMessage(**fields))
    return out if changed else None


class PiiRedactor:
    """Redact emails, phone numbers, card numbers and secrets in tool results.

    Example::

        agent = Agent(..., post_turn_policies=[PiiRedactor()])
        # a tool returning "mail bob@example.com" reaches the model as
        # "mail [REDACTED:email]"

    Args:
        emails: whether to redact email addresses (default: yes).
        phones: whether to redact phone numbers (default: yes).
        cards: whether to redact card numbers (default: yes).
        secrets: whether to redact key-like secrets and tokens (default: yes).
        extra: more patterns, by kind name; each match is replaced whole.
        replacement: the text put in place of a match; ``{kind}`` names what was removed.
        in_thread_above: tool results holding more text than this (characters) are redacted
            in a worker thread, so the event loop runs on meanwhile (default 64 KiB).
    """

    __slots__ = ("_steps", "in_thread_above", "replacement")

    def __init__(
        self,
        *,
        emails: bool = True,
        phones: bool = True,
        cards: bool = True,
        secrets: bool = True,
        extra: Mapping[str, str | re.Pattern[str]] | None = None,
        replacement: str = "[REDACTED:{kind}]",
        in_thread_above: int = 64 * 1024,
    ) -> None:
        self.replacement = replacement
        self.in_thread_above = in_thread_above
        steps: list[Callable[[str], str]] = []
        for kind, pattern in (extra or {}).items():
            steps.append(self._whole(re.compile(pattern), kind))
        if secrets:
            steps.extend(self._whole(p, "secret") for p in _SECRET_PATTERNS)
            secret = self.replacement.format(kind="secret")
            steps.append(lambda s: _jwt(s, secret))
            steps.append(self._value(_BEARER, "secret"))
            steps.append(lambda s: _keyish(s, secret))
        if cards:
            steps.append(self._checked(_CARD, "card", _is_card))
        if emails:
            steps.append(self._whole(_EMAIL, "email"))
        if phones:
            steps.append(self._checked(_PHONE, "phone", _is_phone))
        self._steps = tuple(steps)

    def _whole(self, pattern: re.Pattern[str], kind: str) -> Callable[[str], str]:
        text = self.replacement.format(kind=kind).replace("\\", "\\\\")
        return lambda s: pattern.sub(text, s)

    def _value(self, pattern: re.Pattern[str], kind: str) -> Callable[[str], str]:
        text = self.replacement.format(kind=kind)
        return lambda s: pattern.sub(lambda m: m.group(1) + text, s)

    def _checked(
        self, pattern: re.Pattern[str], kind: str, check: Callable[[str], bool]
    ) -> Callable[[str], str]:
        text = self.replacement.format(kind=kind)
        return lambda s: pattern.sub(lambda m: text if check(m.group(0)) else m.group(0), s)

    def redact(self, text: str) -> str:
        """``text`` with everything recognised replaced."""
        for step in self._steps:
            text = step(text)
        return text

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict | Awaitable[PolicyVerdict]:
        """Replace the turn's tool results with redacted ones when anything was found.

        Past ``in_thread_above`` characters of text the verdict is an awaitable: the pass runs
        in a worker thread (an abort abandons it; its result is then dropped).
        """
        results = ctx.tool_results
        if not results:
            return CONTINUE
        size = sum(len(b.text) for r in results for b in r.content if type(b) is Text)
        if size > self.in_thread_above:
            return self._in_thread(results)
        return self._verdict(results)

    def _verdict(self, results: Sequence[ToolResultMessage]) -> PolicyVerdict:
        replaced = rewrite_results(results, self.redact)
        if replaced is None:
            return CONTINUE
        return Replace(tool_results=replaced)

    async def _in_thread(self, results: Sequence[ToolResultMessage]) -> PolicyVerdict:
        return await anyio.to_thread.run_sync(self._verdict, results, abandon_on_cancel=True)

    def __repr__(self) -> str:
        return f"PiiRedactor({len(self._steps)} patterns)"
