"""Package text (untrusted Markdown) to inert HTML: raw HTML escaped, only safe link schemes, no images."""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_IGNORED_RE = re.compile(r"[\x00-\x20\x7f]+")  # browsers drop these inside a URL: "java\tscript:" is javascript:


def safe_link(url: str) -> bool:
    """True for a relative link, an anchor or an http(s)/mailto URL; False for javascript:, data:, vbscript:..."""
    compact = _IGNORED_RE.sub("", url)
    match = _SCHEME_RE.match(compact)
    return match is None or match.group(1).lower() in SAFE_SCHEMES


def _image_as_link(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """An image is shown as a link to it: nothing loads from elsewhere, and the CSP allows no foreign image."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = str(token.attrGet("src") or "")
    return (
        f'<a class="image-link" href="{escapeHtml(src)}" rel="nofollow noopener noreferrer">'
        f"[image: {escapeHtml(alt)}]</a>"
    )


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _parser()


def render_markdown(text: str) -> str:
    """HTML for `text`; safe to insert into a page as it is (every tag in it comes from the renderer)."""
    html: str = _MD.render(text)
    return html
