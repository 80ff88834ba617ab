"""docs/architecture.md's folder map names every module of `pdfrag/`, `chatbot/` and `harness/` in the block of
its own folder (issue #42 item 6), as tests/README.md names every test file (tests/test_docs.py).

The map is the code block under "## The folders": a line whose first word ends in `/` opens a folder's block,
which runs until the next line indented no deeper than it; a module is named when `name.py` stands in the text its
folder's block holds outside the blocks of its subfolders. A package's face (`__init__.py`) and `__main__.py` are
not modules to name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("pdfrag", "chatbot", "harness")
NOT_NAMED = {"__init__.py", "__main__.py"}


@dataclass
class Block:
    path: str  # "harness/saved/"
    indent: int
    text: list[str] = field(default_factory=list)  # its own lines, those of its subfolders' blocks left out


def folder_map(page: str) -> str:
    """The code block under the heading "## The folders"."""
    section = page.split("\n## The folders\n", 1)[1]
    return section.split("```", 2)[1]


def blocks(map_text: str) -> dict[str, Block]:
    """Each folder's block of the map, by its path from the repository's root."""
    found: dict[str, Block] = {}
    open_blocks: list[Block] = []
    for line in map_text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while open_blocks and indent <= open_blocks[-1].indent:
            open_blocks.pop()
        first = line.split()[0]
        if first.endswith("/") and re.fullmatch(r"[\w.]+/", first):
            parent = open_blocks[-1].path if open_blocks else ""
            block = Block(parent + first, indent, [line[indent + len(first):]])
            found[block.path] = block
            open_blocks.append(block)
        elif open_blocks:
            open_blocks[-1].text.append(line)
    return found


def unnamed(map_text: str, modules: list[Path]) -> list[str]:
    """The modules (paths from the root) the map does not name in their folder's block."""
    found = blocks(map_text)
    missing = []
    for module in modules:
        folder = module.parent.as_posix() + "/"
        block = found.get(folder)
        text = "\n".join(block.text) if block else ""
        if not re.search(rf"(?<![\w/.]){re.escape(module.name)}\b", text):
            missing.append(module.as_posix() + ("" if block else f" (no block for {folder})"))
    return missing


def modules() -> list[Path]:
    return sorted(p.relative_to(REPO) for package in PACKAGES for p in (REPO / package).rglob("*.py")
                  if p.name not in NOT_NAMED)


def test_the_architecture_page_names_every_module_in_its_folders_block() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = unnamed(folder_map(page), modules())
    assert not missing, ("docs/architecture.md's folder map does not name these modules in their folder's block "
                         "(add a line or a mention for each): " + ", ".join(missing))


def test_a_module_named_only_in_another_folders_block_is_missing() -> None:
    text = ("pkg/\n  a.py          the first; b.py too\n  sub/          c.py (named here, for sub/ only)\n"
            "                d.py: still sub/'s\n  e.py\n")
    assert blocks(text)["pkg/sub/"].text[0].strip().startswith("c.py")
    got = unnamed(text, [Path("pkg/a.py"), Path("pkg/b.py"), Path("pkg/c.py"), Path("pkg/sub/d.py"),
                         Path("pkg/e.py"), Path("pkg/sub/x.py"), Path("other/f.py"), Path("pkg/ab.py")])
    assert got == ["pkg/c.py", "pkg/sub/x.py", "other/f.py (no block for other/)", "pkg/ab.py"]
