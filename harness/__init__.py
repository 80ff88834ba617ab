"""pdf-rag-eval's evaluation harness: judge any RAG system on labelled cases; a model
judge only ever as one more reviewer, measured against people (`rag-eval judge`).

The public surface: the records a system returns (`SystemAnswer`, `Passage`, `Citation`) and a run writes
(`Row`, `Summary`, `Manifest`), the system interface, and the library calls behind `rag-eval`.
"""

from .cases import Case, Evidence, load_cases
from .records import Citation, Manifest, Passage, Row, Summary, SystemAnswer
from .systems import System, load_system

__all__ = ["Case", "Citation", "Evidence", "Manifest", "Passage", "Row", "Summary", "System", "SystemAnswer",
           "load_cases", "load_system"]
