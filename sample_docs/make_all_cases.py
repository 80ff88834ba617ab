"""Write `all_cases.jsonl`, the default run's cases: the handbook's `cases.jsonl`, then `collection/cases.jsonl`.

Both sources stay the files you edit; this one is generated, so a case is never kept twice by hand.
`tests/report/test_layout.py` fails when the committed file is out of date.

    python sample_docs/make_all_cases.py           # rewrites sample_docs/all_cases.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = (HERE / "cases.jsonl", HERE / "collection" / "cases.jsonl")
TARGET = HERE / "all_cases.jsonl"


def combined() -> str:
    """The sources' lines, in order, each source ending with a newline; blank lines dropped."""
    lines = []
    for source in SOURCES:
        lines += [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else TARGET
    out.write_text(combined(), encoding="utf-8")
    print(f"wrote {out}")
