"""Package text renders inert: raw HTML escaped, unsafe link schemes dropped, images shown as links."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry_server.web.markdown import render_markdown, safe_link

# Every tag the renderer may produce (CommonMark plus tables); anything else came from the input.
ALLOWED_TAGS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
    "a", "hr", "br", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRS = {"href", "rel", "class", "title", "start", "style"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def assert_inert(html: str) -> None:
    for tag, attrs in tags_of(html):
        assert tag in ALLOWED_TAGS, (tag, html)
        assert set(attrs) <= ALLOWED_ATTRS, (attrs, html)
        if tag == "a":
            assert safe_link(attrs["href"] or ""), html
        # markdown-it writes style only for table cell alignment (and the CSP forbids inline style anyway)
        assert attrs.get("style") in (None, "text-align:left", "text-align:center", "text-align:right"), attrs


def test_raw_html_is_text_not_markup() -> None:
    html = render_markdown("<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\nhi <b onclick=x>there</b>\n")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "&lt;b onclick=x&gt;" in html
    assert [tag for tag, _ in tags_of(html)] == ["p", "p", "p"]


@pytest.mark.parametrize("url", [
    "javascript:alert(3)", "JaVaScRiPt:alert(3)", "vbscript:msgbox(1)", "data:text/html;base64,PHNjcmlwdD4=",
    "data:image/png;base64,iVBORw0KGgo=", "file:///etc/passwd",
])
def test_unsafe_links_and_images_are_dropped(url: str) -> None:
    html = render_markdown(f"[x]({url}) and ![y]({url}) and <{url}>\n")
    assert "href" not in html, html
    assert_inert(html)


def test_a_scheme_split_by_control_characters_is_still_refused() -> None:
    assert not safe_link("java\tscript:alert(1)")
    assert not safe_link(" \x01javascript:alert(1)")
    assert not safe_link("java\nscript:alert(1)")


@pytest.mark.parametrize("url", ["https://example.com/x", "http://example.com", "mailto:a@example.com",
                                 "#usage", "docs/guide.md", "/skills/git-workflow", "?version=1.0.0",
                                 "java%0Ascript:alert(1)"])  # no scheme a browser knows: a relative path
def test_safe_links_are_kept_with_rel(url: str) -> None:
    html = render_markdown(f"[go]({url})\n")
    (tag, attrs), = [t for t in tags_of(html) if t[0] == "a"]
    assert attrs["rel"] == "nofollow noopener noreferrer"
    assert safe_link(attrs["href"] or "")


def test_an_image_becomes_a_link_and_loads_nothing() -> None:
    html = render_markdown('![diagram <b>](https://example.com/d.png "t")\n')
    assert "<img" not in html
    assert '<a class="image-link" href="https://example.com/d.png" rel="nofollow noopener noreferrer">' in html
    assert "[image: diagram &lt;b&gt;]" in html


def test_commonmark_and_tables_still_render() -> None:
    html = render_markdown("# Title\n\n- a\n- `b`\n\n| x | y |\n|---|:-:|\n| 1 | 2 |\n\n```\n<code>\n```\n")
    assert "<h1>Title</h1>" in html and "<code>b</code>" in html and "<table>" in html
    assert "&lt;code&gt;" in html
    assert_inert(html)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([
    "<script>", "</script>", "<img src=x onerror=alert(1)>", "[a](", "](", ")", "javascript:", "data:", "![", "<",
    ">", "\n", "`", "*", "#", "| ", "http://x", "\"", "'", "&", "on", "=", " ", "<a href='javascript:x'>", "\\",
]), max_size=40).map("".join))
def test_any_text_renders_to_allowed_tags_only(text: str) -> None:
    assert_inert(render_markdown(text))
