"""`python -m harness.metrics --markdown`: docs/metrics.md, generated from the registry."""

import sys

from .registry import markdown_page

if sys.argv[1:] != ["--markdown"]:
    sys.exit("usage: python -m harness.metrics --markdown")
sys.stdout.write(markdown_page())
