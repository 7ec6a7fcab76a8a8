"""MCP content into agentloop content blocks, bounded: what a server sends cannot flood history.

Every block a server sends (in a tool result, a resource, a prompt) goes through ``Bounded``,
which maps it to an agentloop block and enforces the ``ResultLimits`` of its spec:

- text: at most ``max_text`` characters in all (a longer text is cut where the limit falls);
- blocks: at most ``max_blocks`` (the rest are left out);
- images: the data must be base64 that decodes, of an allowed media type whose leading bytes
  match it, and at most ``max_image_bytes`` once decoded; otherwise a line of text says why
  the image was left out (a provider would reject the whole request for one bad image);
- audio and binary resources: at most ``max_binary_bytes`` of base64.

What was cut is said twice: a text block at the end of the content, for the model, and
``Bounded.report()`` (put in ``details["truncated"]``), for the application.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import msgspec
from mcp import types
from pydantic import TypeAdapter, ValidationError

from agentloop import ContentBlock, Extension, Image, Text

__all__ = ["Bounded", "ResultLimits", "check_image", "link_of", "to_mcp_blocks"]


class ResultLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on what one result (a tool result, a resource read, a prompt) may bring in.

    Attributes:
        max_text: characters of text in all; the rest is cut, with a marker saying how much.
        max_blocks: content blocks; the rest are left out, with a marker.
        max_image_bytes: the decoded size of one image.
        image_types: the media types an image may have.
        max_binary_bytes: the base64 size of one audio clip or binary resource.
        max_structured_bytes: the JSON size of a tool's ``structuredContent``; a larger one is
            left out of ``details`` (the text blocks still carry the result).
    """

    max_text: int = 100_000
    max_blocks: int = 100
    max_image_bytes: int = 5 * 1024 * 1024
    image_types: Sequence[str] = ("image/png", "image/jpeg", "image/gif", "image/webp")
    max_binary_bytes: int = 5 * 1024 * 1024
    max_structured_bytes: int = 1_000_000


# The leading bytes of each image format: a server's claim is checked against the data.
_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def check_image(data: str, media_type: str, limits: ResultLimits) -> str | None:
    """Why an image cannot be sent to a model, or ``None`` when it can."""
    if media_type not in limits.image_types:
        return f"media type {media_type!r} is not allowed"
    # Checked before decoding: a huge payload costs nothing to refuse.
    if len(data) * 3 // 4 > limits.max_image_bytes + 3:
        return f"larger than {limits.max_image_bytes:,} bytes"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "its data is not valid base64"
    if len(raw) > limits.max_image_bytes:
        return f"larger than {limits.max_image_bytes:,} bytes"
    magic = _MAGIC.get(media_type)
    if magic is not None and not raw.startswith(magic):
        return f"its data is not a {media_type} image"
    if media_type == "image/webp" and raw[8:12] != b"WEBP":
        return "its data is not a image/webp image"
    return None


def link_of(block: types.ResourceLink) -> dict[str, Any]:
    """A resource link as plain data (``details["resource_links"]``)."""
    link: dict[str, Any] = {"uri": block.uri, "name": block.name}
    for key in ("title", "description", "mime_type", "size"):
        value = getattr(block, key, None)
        if value is not None:
            link[key] = value
    return link


class Bounded:
    """Maps MCP blocks to agentloop blocks within ``limits``; ``blocks`` is the result."""

    def __init__(self, limits: ResultLimits) -> None:
        self.limits = limits
        self.blocks: list[ContentBlock] = []
        self.links: list[dict[str, Any]] = []
        self._text_left = limits.max_text
        self._text_total = 0
        self._blocks_seen = 0
        self._images_dropped: list[str] = []

    # ------------------------------------------------------------------ adding

    def add_text(self, text: str) -> None:
        """Add a text block, cut to what the text budget has left."""
        if not self._room():
            return
        self._text_total += len(text)
        if self._text_left <= 0:
            return
        if len(text) > self._text_left:
            text = text[: self._text_left]
        self._text_left -= len(text)
        self.blocks.append(Text(text=text))

    def add_image(self, data: str, media_type: str, *, where: str = "image") -> None:
        """Add an image if it is valid, else a line saying why it was left out."""
        if not self._room():
            return
        problem = check_image(data, media_type, self.limits)
        if problem is None:
            self.blocks.append(Image(media_type=media_type, data=data))
            return
        self._images_dropped.append(problem)
        self.blocks.append(Text(text=f"[{where} left out: {problem}]"))

    def add_binary(self, type_name: str, data: dict[str, Any], size: int, what: str) -> None:
        """Add an ``Extension`` block for audio or a binary resource, within its size bound."""
        if not self._room():
            return
        if size > self.limits.max_binary_bytes:
            self.blocks.append(
                Text(text=f"[{what} left out: larger than {self.limits.max_binary_bytes:,} bytes]")
            )
            return
        self.blocks.append(Extension(type_name=type_name, data=data))

    def add_mcp(self, block: Any) -> None:
        """Add one MCP content block (text, image, audio, resource, resource link)."""
        if isinstance(block, types.TextContent):
            self.add_text(block.text)
        elif isinstance(block, types.ImageContent):
            self.add_image(block.data, block.mime_type)
        elif isinstance(block, types.EmbeddedResource):
            self.add_resource(block.resource, embedded=True)
        elif isinstance(block, types.ResourceLink):
            if self._room():
                self.links.append(link_of(block))
                title = block.title or block.name
                self.blocks.append(Text(text=f"[resource: {title} <{block.uri}>]"))
        else:
            kind = getattr(block, "type", type(block).__name__)
            data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
            self.add_binary(f"mcp_{kind}", data, len(str(data.get("data", ""))), str(kind))

    def add_resource(self, contents: Any, *, embedded: bool = False) -> None:
        """Add the contents of a resource: text as text, an image blob as an image."""
        if isinstance(contents, types.TextResourceContents):
            self.add_text(contents.text)
            return
        mime = contents.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            self.add_image(contents.blob, mime, where=f"image {contents.uri}")
            return
        data = contents.model_dump(mode="json", by_alias=True, exclude_none=True)
        if embedded:
            data = {"type": "resource", "resource": data}
        self.add_binary("mcp_resource", data, len(contents.blob), f"resource {contents.uri}")

    def _room(self) -> bool:
        self._blocks_seen += 1
        return self._blocks_seen <= self.limits.max_blocks

    # ------------------------------------------------------------------ what was cut

    def report(self) -> dict[str, Any] | None:
        """What was cut, or ``None`` when nothing was."""
        cut: dict[str, Any] = {}
        if self._text_total > self.limits.max_text:
            cut["text_chars"] = self._text_total
            cut["text_chars_kept"] = self.limits.max_text
        if self._blocks_seen > self.limits.max_blocks:
            cut["blocks"] = self._blocks_seen
            cut["blocks_kept"] = self.limits.max_blocks
        if self._images_dropped:
            cut["images_left_out"] = list(self._images_dropped)
        return cut or None

    def finish(self) -> list[ContentBlock]:
        """The blocks, with a closing marker when text or blocks were cut."""
        cut = self.report()
        notes: list[str] = []
        if cut is not None and "text_chars" in cut:
            notes.append(
                f"text cut to {cut['text_chars_kept']:,} of {cut['text_chars']:,} characters"
            )
        if cut is not None and "blocks" in cut:
            notes.append(
                f"{cut['blocks'] - cut['blocks_kept']:,} of {cut['blocks']:,} blocks left out"
            )
        if notes:
            self.blocks.append(Text(text=f"[result cut by the MCP client: {'; '.join(notes)}]"))
        return self.blocks


_MCP_BLOCK: TypeAdapter[Any] = TypeAdapter(types.ContentBlock)


def to_mcp_blocks(blocks: Sequence[ContentBlock]) -> list[Any]:
    """The other direction, for what ``serve`` sends: text and images as themselves, an image
    by URL as a line of text, and ``Extension`` blocks of MCP content (``mcp_audio``,
    ``mcp_resource``, ... as the client side keeps them) as the MCP blocks they were. Other
    blocks (thinking, tool calls, foreign extensions) are left out."""
    content: list[Any] = []
    for block in blocks:
        if isinstance(block, Text):
            content.append(types.TextContent(type="text", text=block.text))
        elif isinstance(block, Image) and block.data is not None:
            content.append(
                types.ImageContent(type="image", data=block.data, mime_type=block.media_type)
            )
        elif isinstance(block, Image) and block.url is not None:
            content.append(types.TextContent(type="text", text=f"[image: {block.url}]"))
        elif isinstance(block, Extension) and block.type_name.startswith("mcp_"):
            try:
                content.append(_MCP_BLOCK.validate_python(block.data))
            except ValidationError:
                continue  # not MCP content after all
    return content
