"""`python -m harness.cli` = `rag-eval`."""

import sys

from . import main

sys.exit(main())
