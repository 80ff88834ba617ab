"""Saved outputs of any system: their layouts (CSV / JSONL), scoring them, and a run's record/replay files.
"""
