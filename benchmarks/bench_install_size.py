"""The disk size of the environments the README's commands create: the Quick start's (what a
learner installs) and the Developing one's (the test tooling on top).

Run: python benchmarks/bench_install_size.py [REQUIREMENTS ...]

For each requirements file (requirements.txt and requirements-dev.txt by default) it creates a
fresh virtual environment in a temporary folder, runs `pip install -r FILE` there, as the README
does, and prints the environment's size and its largest packages. The learner's install should
stay under 400 MiB. It needs the package index (or pip's cache), and takes minutes.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("requirements.txt", "requirements-dev.txt")
LEARNER_LIMIT_MIB = 400
LARGEST_SHOWN = 8


def size_mib(path: Path) -> float:
    """Disk space of the files under `path` (links not followed), in MiB, as `du -sm` counts."""
    return sum(f.lstat().st_blocks * 512 for f in path.rglob("*") if not f.is_symlink()) / 2**20


def install(requirements: str, into: Path) -> None:
    venv.create(into, with_pip=True)
    pip = into / "bin" / "pip"
    subprocess.run([str(pip), "install", "--quiet", "-r", requirements], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def largest(site_packages: Path) -> list[tuple[float, str]]:
    sizes = [(size_mib(p) if p.is_dir() else p.lstat().st_blocks * 512 / 2**20, p.name)
             for p in site_packages.iterdir()]
    return sorted(sizes, reverse=True)[:LARGEST_SHOWN]


def main() -> None:
    for requirements in sys.argv[1:] or DEFAULT:
        with tempfile.TemporaryDirectory() as tmp:
            env = Path(tmp) / "venv"
            install(requirements, env)
            total = size_mib(env)
            site = next(env.glob("lib/python*/site-packages"))
            print(f"pip install -r {requirements}: {total:.0f} MiB on disk")
            print("  largest: " + ", ".join(f"{name} {mb:.0f}" for mb, name in largest(site)))
            if requirements == "requirements.txt":
                verdict = "under" if total < LEARNER_LIMIT_MIB else "OVER"
                print(f"  the learner's install is {verdict} {LEARNER_LIMIT_MIB} MiB")


if __name__ == "__main__":
    main()
