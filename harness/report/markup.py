"""Text from outside (documents, systems, labels, reviewers) placed in HTML and Markdown pages: one place.

- `esc`: HTML-escaped, and wrapped in `<bdi>` when it holds right-to-left letters or bidi controls, so a U+202E in
  a tag cannot reverse the page's own text after it (each piece is isolated from its neighbours).
- `attr`: escaped for an attribute value (no markup possible there).
- `md`: a Markdown table cell or list item that stays text: HTML and Markdown punctuation backslash-escaped,
  line breaks folded.
- `CSP_META` and `WRAP_CSS`: the Content-Security-Policy of every page (no script, no fetch) and the rule that
  wraps very long tokens instead of widening the page; `LIST_LIMIT`, how many items a page's list shows (the rest:
  "first N of M" and the command that writes them all), so a page of a million cases still opens.
"""

from __future__ import annotations

import html
import re

__all__ = ["CSP_META", "LIST_LIMIT", "WRAP_CSS", "attr", "esc", "md"]

CSP_META = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">")
WRAP_CSS = "td,th,li,p,div,summary,code{overflow-wrap:anywhere}bdi{unicode-bidi:isolate}"
LIST_LIMIT = 200  # items per list of a report: cases of a contents group or a case table, groups of a breakdown

# Hebrew, Arabic, Syriac, Thaana, NKo, ... (U+0590-U+08FF), RTL presentation forms, the RTL supplementary blocks,
# and the bidi controls (marks, embeddings, overrides, isolates).
_BIDI = re.compile("[\u0590-\u08ff\u200e\u200f\u202a-\u202e\u2066-\u2069\ufb1d-\ufdff\ufe70-\ufefe"
                   "\U00010800-\U00010fff\U0001e800-\U0001efff]")
_MARKDOWN = re.compile(r"([\\`*_\[\]<>&|~])")


def attr(value: object) -> str:
    return html.escape(str(value), quote=True)


def esc(value: object) -> str:
    """HTML text of `value`, isolated in <bdi> when its direction could leak into the text around it."""
    text = html.escape(str(value), quote=True)
    return f"<bdi>{text}</bdi>" if _BIDI.search(text) else text


def md(value: object) -> str:
    """`value` as Markdown text: no link, emphasis, HTML or table break can come from it."""
    return _MARKDOWN.sub(r"\\\1", " ".join(str(value).splitlines()))
