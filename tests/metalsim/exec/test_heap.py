"""The heap keeps freed lane-sized temporaries for reuse once a launch ran (glibc only), and
settings a user made through glibc's environment variables are left alone."""

import os
import platform
import subprocess
import sys

import pytest

from metalsim.exec import heap

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# Two 16 MiB temporaries made and freed, as a statement's lane arrays are: page faults per
# round after the first. glibc's default trims the 32 MiB freed at the top of the heap each
# round, so that every round faults its pages in again (about a thousand faults here, numpy
# asking for huge pages where it can).
FAULTS_PER_ROUND = """
import resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from metalsim.exec.heap import keep_freed_memory
    assert keep_freed_memory()
def round_():
    a = np.ones(2 << 20)
    b = np.ones(2 << 20)
    del a, b
round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(8):
    round_()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 8)
"""


def faults_per_round(mode: str) -> int:
    env = {k: v for k, v in os.environ.items()
           if k not in heap.USER_SETTINGS and k != "GLIBC_TUNABLES"}
    done = subprocess.run([sys.executable, "-c", FAULTS_PER_ROUND, mode], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not GLIBC, reason="tunes glibc's malloc only")
def test_freed_temporaries_are_reused_without_faulting_their_pages_in_again():
    untuned, tuned = faults_per_round("default"), faults_per_round("tuned")
    assert untuned > 200           # the pattern does fault without tuning
    assert tuned < untuned // 20


@pytest.mark.parametrize("name, value", [("MALLOC_TRIM_THRESHOLD_", "131072"),
                                         ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")])
def test_a_users_malloc_settings_are_left_alone(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert heap._tune() is False
