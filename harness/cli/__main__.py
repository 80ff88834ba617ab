"""`python -m harness.cli ...` runs `rag-eval ...` (for a checkout without the installed script)."""

from . import main

raise SystemExit(main())
