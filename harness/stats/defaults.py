"""Defaults shared by the statistics and the commands that show them; importing this loads nothing else, so a
command's `--help` can name them without numpy."""

DEFAULT_RESAMPLES = 10_000  # randomisation resamples (compare's Monte-Carlo p) and agreement's bootstrap
DEFAULT_SEED = 0
GATE_ALPHA = 0.05  # --fail-if-worse: B is significantly worse when its Holm-adjusted sign-flip p is at most this
DEFAULT_PRIMARY = "passed"  # the metric compare and sweeps decide on: share of cases passing every applicable check
# `--judged-passed` lets a judge fill in `passed` only when the lower end of kappa's analytic 95% interval (judge
# against people) is at least this, among the other conditions of `harness/stats/judge_floor.py`: 0.6 is where Landis
# and Koch's "substantial" agreement begins (1977), so a judge that clears it agrees with people substantially even
# at the pessimistic end of what its shared claims show.
DEFAULT_MIN_JUDGE_KAPPA = 0.6
