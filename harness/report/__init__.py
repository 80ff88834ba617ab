"""The HTML report of a run: the page, its sections, the failure funnel and the reviewers' agreement.
"""
