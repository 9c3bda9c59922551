"""The readable text of a Sphinx-built HTML page, for documentation that ships only as HTML.

Only the page's content sections (``<div class="section">`` or ``<section>``) are kept, not its
navigation, sidebar or footer. Paragraphs, headings, list items and code blocks become blocks
separated by a blank line; text keeps the line breaks of its HTML source (Sphinx keeps the reST
source's wrapping) and code blocks keep theirs exactly. Permalink marks (``¶``) are dropped.
"""

from __future__ import annotations

from html.parser import HTMLParser

BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "pre", "tr", "blockquote", "div", "section", "table"}


def is_section(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    classes = (dict(attrs).get("class") or "").split()
    return tag == "section" or (tag == "div" and "section" in classes)


class _SectionText(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.depth = 0  # open div/section elements since the outermost content section began
        self.skip = 0  # open elements whose text is dropped (permalinks, scripts)

    def handle_starttag(self, tag, attrs):
        if self.depth == 0 and not is_section(tag, attrs):
            return
        if tag in ("div", "section"):
            self.depth += 1
        classes = (dict(attrs).get("class") or "").split()
        if self.skip or "headerlink" in classes or tag in ("script", "style"):
            self.skip += 1
        if tag in BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if self.depth == 0:
            return
        if self.skip:
            self.skip -= 1
        if tag in BLOCK_TAGS:
            self.parts.append("\n\n")
        if tag in ("div", "section"):
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.parts.append(data)


def page_text(html: str) -> str:
    """The content sections of ``html`` as plain text ('' when the page has none)."""
    parser = _SectionText()
    parser.feed(html)
    parser.close()
    blocks = (block.strip("\n") for block in "".join(parser.parts).split("\n\n"))
    return "\n\n".join(block for block in blocks if block.strip()) + "\n"
