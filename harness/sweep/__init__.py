"""Sweeps: a grid of settings as a directory of runs (plan, calls, dry run, run) and its leaderboard.
"""
