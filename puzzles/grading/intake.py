"""Finding the submissions of a class, and reading their files as a grader must.

A submission is a notebook file, a `.zip` archive of notebooks, or a folder (its notebooks and
archives, found recursively), at the top of the class folder. Its id is its name, kept exactly
(Unicode NFC, without the `.ipynb`/`.zip` suffix): never cleaned, never renumbered. Two
entries with one id, or a name with control characters, are refused rather than renamed.

Only regular files inside the submission are read: a symbolic link (to a file or a folder), a
device, a FIFO or a socket where a notebook, archive or folder would be refuses the whole
submission with the status "refused" (a link could point at the instructor's solutions, a
device or FIFO could stall the grader). Archives are read in memory, member by member, within
limits on their size, number of members and paths; one outside them is "not graded" with the
limit named. Nothing is ever extracted to disk.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import os
import stat
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from puzzles.grading.integrity import clean_text

NOTEBOOK = ".ipynb"
ARCHIVE = ".zip"
MAX_NOTEBOOK_BYTES = 32 << 20    # one notebook
MAX_ARCHIVE_BYTES = 64 << 20     # one .zip file as stored
MAX_UNPACKED_BYTES = 128 << 20   # the notebooks of one .zip, unpacked
MAX_MEMBERS = 1000               # entries of one .zip
MAX_PATH_CHARS = 255             # a member's path
MAX_PATH_DEPTH = 16              # folders in a member's path, or below a submission folder
MAX_ENTRIES = 10_000             # files and folders walked in one submission folder
SKIPPED_FOLDERS = (".ipynb_checkpoints", "__MACOSX")


class IntakeError(Exception):
    """A file of a submission cannot be read within the grader's rules or limits."""


@dataclass(frozen=True)
class Submission:
    """One student's work: an id (the file or folder name), its notebook and archive files,
    and `refused` (why it is not read at all) or `missing` (on the roster, nothing handed
    in)."""

    id: str
    files: tuple[Path, ...]
    refused: str = ""
    missing: bool = False


@dataclass(frozen=True)
class NotebookFile:
    """A notebook's bytes, where it came from (relative to its submission) and when it was
    last modified (seconds since the epoch)."""

    name: str
    data: bytes
    modified: float


def find_submissions(path: Path) -> list[Submission]:
    """One submission per notebook, archive or folder at the top of `path` (a notebook or
    archive given directly is one submission), in name order."""
    if not path.is_dir():
        return [_submission(path, path.name)]
    entries = sorted((e for e in os.scandir(path) if not e.name.startswith(".")),
                     key=lambda e: e.name)
    found = [(e.name, _submission(Path(e.path), e.name)) for e in entries if _is_submission(e)]
    by_id: dict[str, list[str]] = {}
    for name, s in found:
        by_id.setdefault(s.id, []).append(name)
    unique = []
    for name, s in found:
        same = by_id[s.id]
        if len(same) == 1:
            unique.append(s)
            continue
        names = ", ".join(repr(clean_text(n)) for n in same)
        unique.append(Submission(
            name, s.files,
            refused=f"{len(same)} submissions have the id {clean_text(s.id)!r} ({names}); "
                    "rename all but one so that each student keeps their own"))
    return unique


def skipped_entries(path: Path) -> list[str]:
    """Top-level entries of a class folder that are no submission (to say so, not drop them
    silently)."""
    if not path.is_dir():
        return []
    return sorted(e.name for e in os.scandir(path)
                  if not e.name.startswith(".") and not _is_submission(e))


def _is_submission(entry: os.DirEntry) -> bool:
    """A folder, notebook or archive, or something posing as one (a link to a folder, a FIFO
    named like a notebook): those are refused, not skipped."""
    return entry.name.endswith((NOTEBOOK, ARCHIVE)) or entry.is_dir()


def student_id(name: str) -> str:
    """The id of a submission named `name`: the name in Unicode NFC, without its suffix."""
    for suffix in (NOTEBOOK, ARCHIVE):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return unicodedata.normalize("NFC", name)


def _submission(path: Path, name: str) -> Submission:
    sid = student_id(name)
    if clean_text(sid) != sid or "\t" in sid or "\n" in sid:
        return Submission(clean_text(sid).replace("\t", " ").replace("\n", " "), (path,),
                          refused="the name holds control characters; rename it")
    try:
        info = os.lstat(path)
    except OSError as exc:
        return Submission(sid, (path,), refused=f"cannot read it: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return Submission(sid, (path,), refused=f"{name!r} is a symbolic link; only regular "
                                                "files inside the submission are graded")
    if stat.S_ISDIR(info.st_mode):
        try:
            files = _walk(path)
        except IntakeError as exc:
            return Submission(sid, (path,), refused=str(exc))
        return Submission(sid, tuple(files))
    if not stat.S_ISREG(info.st_mode):
        return Submission(sid, (path,), refused=f"{name!r} is {_kind(info.st_mode)}, not a "
                                                "regular file")
    return Submission(sid, (path,))


def _walk(folder: Path) -> list[Path]:
    """The notebooks and archives below `folder`, never following a link; a link, device or
    FIFO where one would be refuses the submission."""
    found: list[Path] = []
    todo = [(folder, 0)]
    seen = 0
    while todo:
        current, depth = todo.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    raise IntakeError(f"the folder holds more than the grader's limit of "
                                      f"{MAX_ENTRIES} files and folders")
                relative = Path(entry.path).relative_to(folder)
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    if entry.name not in SKIPPED_FOLDERS and depth < MAX_PATH_DEPTH:
                        todo.append((Path(entry.path), depth + 1))
                    continue
                wanted = entry.name.endswith((NOTEBOOK, ARCHIVE))
                if stat.S_ISLNK(mode) and (wanted or entry.is_dir()):
                    raise IntakeError(f"{str(relative)!r} is a symbolic link; only regular "
                                      "files inside the submission are graded")
                if wanted and not stat.S_ISREG(mode):
                    raise IntakeError(f"{str(relative)!r} is {_kind(mode)}, not a regular file")
                if wanted:
                    found.append(Path(entry.path))
    return sorted(found)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def read_regular(path: Path, limit: int) -> tuple[bytes, float]:
    """The bytes and modification time of `path`, which must be a regular file (never
    followed through a link, never a device or FIFO) of at most `limit` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise IntakeError(f"cannot read {path.name!r}: {exc.strerror} (a symbolic link?)"
                          ) from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise IntakeError(f"{path.name!r} is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise IntakeError(f"{path.name!r} is larger than the grader's limit of "
                              f"{limit >> 20} MiB")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise IntakeError(f"{path.name!r} is larger than the grader's limit of "
                          f"{limit >> 20} MiB")
    return data, info.st_mtime


def read_notebooks(path: Path) -> list[NotebookFile]:
    """The notebook `path` is, or the notebooks of the archive `path` is."""
    if path.suffix != ARCHIVE:
        data, modified = read_regular(path, MAX_NOTEBOOK_BYTES)
        return [NotebookFile(path.name, data, modified)]
    data, _ = read_regular(path, MAX_ARCHIVE_BYTES)
    return read_archive(path.name, data)


def read_archive(name: str, data: bytes) -> list[NotebookFile]:
    """The notebooks of a `.zip` archive, read in memory within the grader's limits."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise IntakeError(f"{name!r} is not a readable .zip archive ({exc})") from None
    if len(members) > MAX_MEMBERS:
        raise IntakeError(f"{name!r} holds {len(members)} entries, more than the grader's "
                          f"limit of {MAX_MEMBERS}")
    notebooks, unpacked = [], 0
    for member in members:
        path = _member_path(name, member)
        if path is None:
            continue
        if member.flag_bits & 0x1:
            raise IntakeError(f"{name!r}: {member.filename!r} is encrypted")
        unpacked += member.file_size
        if member.file_size > MAX_NOTEBOOK_BYTES or unpacked > MAX_UNPACKED_BYTES:
            raise IntakeError(f"{name!r} unpacks to more than the grader's limit of "
                              f"{MAX_NOTEBOOK_BYTES >> 20} MiB a notebook, "
                              f"{MAX_UNPACKED_BYTES >> 20} MiB in all")
        try:
            with archive.open(member) as f:
                content = f.read(member.file_size + 1)  # never more than the header says
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
            raise IntakeError(f"{name!r}: cannot unpack {member.filename!r} ({exc})") from None
        if len(content) != member.file_size:
            raise IntakeError(f"{name!r}: {member.filename!r} is not the size its header says")
        year, month, day, hour, minute, second = member.date_time
        modified = _timestamp(year, month, day, hour, minute, second)
        notebooks.append(NotebookFile(f"{name}/{path}", content, modified))
    return notebooks


def _member_path(name: str, member: zipfile.ZipInfo) -> str | None:
    """The member's path if it is a notebook to read, None if it is something to skip; an
    unsafe path or a link refuses the archive."""
    filename = member.filename.replace("\\", "/")
    parts = PurePosixPath(filename).parts
    if filename.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        raise IntakeError(f"{name!r}: the member path {filename!r} leaves the archive")
    if len(filename) > MAX_PATH_CHARS or len(parts) > MAX_PATH_DEPTH + 1:
        raise IntakeError(f"{name!r}: the member path {filename[:80]!r}... is longer than the "
                          f"grader's limit ({MAX_PATH_CHARS} characters, {MAX_PATH_DEPTH} "
                          "folders)")
    mode = member.external_attr >> 16
    if stat.S_ISLNK(mode) and filename.endswith((NOTEBOOK, "/")):
        raise IntakeError(f"{name!r}: {filename!r} is a symbolic link")
    if member.is_dir() or not filename.endswith(NOTEBOOK) or any(
            p in SKIPPED_FOLDERS or p.startswith(".") for p in parts):
        return None
    return filename


def _timestamp(*date_time: int) -> float:
    try:
        return datetime.datetime(*date_time).timestamp()
    except ValueError:
        return 0.0


def read_roster(path: Path) -> list[str]:
    """The student ids of a roster: a CSV whose column `id` (or `student`, or else the first)
    holds them, NFC-normalised, in order."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise IntakeError(f"cannot read the roster {path}: {exc}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return []
    header = [cell.strip().lower() for cell in rows[0]]
    column = next((header.index(k) for k in ("id", "student") if k in header), None)
    body = rows[1:] if column is not None else rows
    column = column or 0
    ids: list[str] = []
    for number, row in enumerate(body, 2 if body is not rows else 1):
        if column >= len(row) or not row[column].strip():
            continue
        sid = unicodedata.normalize("NFC", row[column].strip())
        if sid in ids:
            raise IntakeError(f"the roster {path} lists {sid!r} twice (line {number})")
        ids.append(sid)
    return ids


def folder_submission(path: Path, sid: str) -> Submission:
    """The folder `path` as one student's submission (Gradescope's, PrairieLearn's), with the
    id `sid`: every notebook or archive inside it, whatever its name, read as in a class."""
    return dataclasses.replace(_submission(path, path.name), id=sid)
