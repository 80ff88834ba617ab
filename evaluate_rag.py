#!/usr/bin/env python3
"""Evaluate the bundled PDF chatbot on labelled cases: `python evaluate_rag.py --help` (same as `rag-eval run`)."""

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
