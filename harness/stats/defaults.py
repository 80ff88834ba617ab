"""Defaults shared by the statistics and the commands that show them; importing this loads nothing else, so a
command's `--help` can name them without numpy."""

DEFAULT_RESAMPLES = 10_000  # bootstrap and randomisation resamples, for compare and agreement alike
DEFAULT_SEED = 0
DEFAULT_PRIMARY = "passed"  # the metric compare and sweeps decide on: share of cases passing every applicable check
