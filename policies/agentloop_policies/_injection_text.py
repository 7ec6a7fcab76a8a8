"""What ``PromptInjectionGuard`` reads: a text, normalised, and the views that undo cheap
obfuscations.

Every view is lower case, NFKC-folded (full-width and mathematical letters become plain ones),
without invisible format characters (zero-width spaces and joiners, bidi controls) and with
runs of spaces and tabs collapsed; line breaks are kept, so rules can anchor on a line. Then,
only where a cheap test finds the obfuscation, one more view each:

* **homoglyphs**: in a word that mixes Latin letters with Cyrillic or Greek look-alikes
  (``Іgnоrе``: a Cyrillic І, о and е), the look-alikes become the Latin letters. A word wholly
  in another script is left alone, so Russian or Greek text is read as what it is;
* **split letters**: a run of single letters with one to three separators between them
  (``i g n o r e``, ``i-g-n-o-r-e``, ``D.i.s.r.e.g.a.r.d``) is joined into a word, and the
  joined words are kept apart for the rules written without spaces;
* **base64**: a run of 16 or more base64 characters that decodes to readable UTF-8 text is
  read as that text (at most ``_MAX_BLOBS`` runs, each at most ``_MAX_BLOB`` characters);
* **ROT13**: when a ROT13 form of a trigger word (``vtaber`` is "ignore") is in the text, the
  whole text is read decoded too.

All of it is linear in the text's length: no pattern here can backtrack more than a bounded
distance.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["View", "views"]

_MAX_BLOBS = 64
_MAX_BLOB = 64 * 1024

# The invisible format characters (Unicode category Cf, as of Unicode 15: zero-width spaces
# and joiners, bidi controls, tag characters...); a test checks the class against unicodedata.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)
_BLANKS = re.compile(r"[^\S\n]+")

# Cyrillic and Greek letters that look like Latin ones (after lower-casing).
_LOOKALIKE = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
    "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ɡ": "g",
    "ν": "v", "ο": "o", "α": "a", "ι": "i", "ρ": "p", "τ": "t", "κ": "k", "υ": "u",
    "χ": "x", "β": "b", "ε": "e", "η": "n", "ϲ": "c", "ϳ": "j",
}  # noqa: RUF001  # fmt: skip
_FOLD = str.maketrans(_LOOKALIKE)
_WORD = re.compile(r"\w+")
_LATIN = re.compile(r"[a-z]")
_CONFUSABLE = re.compile("[" + "".join(_LOOKALIKE) + "]")

_LETTER = r"[^\W\d_]"
_SPLIT = re.compile(rf"(?<!\w)(?:{_LETTER}[ .\-_*/|,]{{1,3}}){{3,}}{_LETTER}(?!\w)")
_SEPARATORS = re.compile(r"[ .\-_*/|,]+")
_WIDE_GAP = re.compile(rf"{_LETTER}[ .\-_*/|,]{{2,3}}(?={_LETTER})")

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_ROT13_TRIGGERS = re.compile(
    r"\b(?:vtaber|qvfertneq|sbetrg|bireevqr|vafgehpgvbaf?|flfgrz cebzcg|erirny|cergraq)\b"
)


class View:
    """One reading of a text: its normalised ``text``, and the ``words`` that split letters
    were joined into (checked by the rules written without spaces)."""

    __slots__ = ("text", "words")

    def __init__(self, text: str, words: tuple[str, ...] = ()) -> None:
        self.text = text
        self.words = words


def normalise(text: str) -> str:
    """NFKC, invisible characters removed, lower case, spaces collapsed, lines kept."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return _BLANKS.sub(" ", text).lower()


def _fold_word(match: re.Match[str]) -> str:
    word = match.group()
    if _LATIN.search(word) and _CONFUSABLE.search(word):
        return word.translate(_FOLD)  # a word mixing scripts: the mark of a homoglyph attack
    return word


def _unsplit(text: str) -> tuple[str, tuple[str, ...]]:
    words: list[str] = []

    def join(match: re.Match[str]) -> str:
        run = match.group()
        # Where the gap between two letters is wider than elsewhere, a word ended.
        marked = _WIDE_GAP.sub(lambda m: m.group()[0] + "\x00", run)
        joined = " ".join(_SEPARATORS.sub("", part) for part in marked.split("\x00"))
        words.append(joined.replace(" ", ""))
        return joined

    return _SPLIT.sub(join, text), tuple(words)


def _decoded_blobs(raw: str) -> Iterator[str]:
    found = 0
    for match in _BASE64.finditer(raw):
        blob = match.group()
        if len(blob) > _MAX_BLOB:
            continue
        padded = blob + "=" * (-len(blob) % 4)
        try:
            data = (
                base64.urlsafe_b64decode(padded)
                if "-" in blob or "_" in blob
                else base64.b64decode(padded, validate=True)
            )
            decoded = data.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if decoded and sum(c.isprintable() or c.isspace() for c in decoded) >= 0.95 * len(decoded):
            yield decoded
            found += 1
            if found >= _MAX_BLOBS:
                return


def views(raw: str, *, decode: bool = True) -> Iterator[View]:
    """Every reading of ``raw`` the rules should see, plain first (see the module notes);
    base64 is decoded one level deep (``decode``)."""
    text = normalise(raw)
    yield View(text)
    if not text.isascii():
        folded = _WORD.sub(_fold_word, text)
        if folded != text:
            text = folded
            yield View(text)
    unsplit, words = _unsplit(text)
    if words:
        yield View(unsplit, words)
    if _ROT13_TRIGGERS.search(text):
        yield View(codecs.encode(text, "rot13"))
    if decode:
        for decoded in _decoded_blobs(raw):
            yield from views(decoded, decode=False)
