"""A model judge as one more reviewer: `rag-eval judge RUN` asks a model whether each claim of each answer is
supported by the retrieved passages, validates the quote it gives like any citation, and stores its verdicts in
the reviews file under `judge:<model>@<digest>`; `agreement` measures it against people before any number uses it.
"""
