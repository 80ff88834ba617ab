"""The versions that decide what a manifest's numbers mean: this project, Python, and pypdf (whose version
decides the extracted page text, and so whether a label's quote is found on its page)."""

from __future__ import annotations

import functools
import platform
from importlib import metadata

from ._version import __version__


@functools.cache
def pypdf_version() -> str:
    """The installed pypdf's version, read from its metadata (pypdf itself is not imported)."""
    try:
        return metadata.version("pypdf")
    except metadata.PackageNotFoundError:  # a pypdf on the path without metadata (a vendored copy)
        import pypdf

        return str(pypdf.__version__)


def software_versions() -> dict[str, str]:
    """`{"pdf_rag_eval", "python", "pypdf"}`: written into every index, run and drafts manifest."""
    return {"pdf_rag_eval": __version__, "python": platform.python_version(), "pypdf": pypdf_version()}
