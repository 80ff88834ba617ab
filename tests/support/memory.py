"""The peak resident memory of one command, and of it alone.

Linux keeps the peak of the process a command was started from: a child forked from the test process and then
exec'd reports the test process's own peak if that was higher (1.6 GB after some tests), whatever the command
used. So the command is started from a small launcher, whose peak (the launcher's, about 15 MB) is the floor of
what is measured; the launcher reads the command's peak with wait4 and prints it in kilobytes."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Peak:
    returncode: int
    mb: float
    stderr: str  # the command's


def peak_rss(command: list[str], *, cwd: Path, env: dict | None = None, timeout: float = 300) -> Peak:
    """Run `command` (its output dropped, its stderr kept) and measure its peak RSS."""
    done = subprocess.run([sys.executable, "-c", _LAUNCHER, *command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return Peak(done.returncode, int(done.stdout.strip().splitlines()[-1]) / 1024, done.stderr)
