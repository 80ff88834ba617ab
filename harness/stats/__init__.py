"""Pure statistics: paired comparison of runs, minimum detectable differences, agreement between raters.
"""
