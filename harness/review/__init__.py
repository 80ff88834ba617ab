"""Human review of claims: the reviews file (store), the claim book, CSV export/import, agreement between
reviewers, and rescoring a run against corrected labels.
"""
