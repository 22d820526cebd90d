"""Shared fixtures: the reference material in ../shared (tests that need it skip, naming the path,
when it is absent) and the built command-line tool (for side-by-side checks with the CLI)."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("CTSHARD_SHARED_DIR", ROOT.parent / "shared"))


def shared_path(*parts: str) -> pathlib.Path:
    """A path under ../shared; skips the calling test with a clear message when it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"reference material not found: {p} (clone ../shared beside the repository)")
    return p


_SUMMARY: list[str] = []


def pytest_configure(config):
    """CTSHARD_REQUIRE_EXTENSION=DIR (the sanitizer build's Python test): refuse to run unless
    `ctshard._ext` is the module built under DIR, so an installed copy cannot stand in for it."""
    want = os.environ.get("CTSHARD_REQUIRE_EXTENSION")
    if want:
        import ctshard._ext as ext

        got = pathlib.Path(ext.__file__).resolve()
        if not got.is_relative_to(pathlib.Path(want).resolve()):
            raise pytest.UsageError(f"ctshard._ext was loaded from {got}, not from {want}")


@pytest.fixture(scope="session")
def summary():
    """`summary(line)` adds a line to the end-of-run summary (the test command repeats it)."""
    return _SUMMARY.append


def pytest_terminal_summary(terminalreporter):
    for line in _SUMMARY:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def tool() -> pathlib.Path:
    """The built `ctshard` executable (CTSHARD_TOOL, else build/examples/ctshard)."""
    p = pathlib.Path(os.environ.get("CTSHARD_TOOL", ROOT / "build" / "examples" / "ctshard"))
    if not p.exists():
        found = shutil.which("ctshard")
        if found is None:
            pytest.fail(f"the ctshard tool is not built ({p}); run scripts/build.sh first")
        p = pathlib.Path(found)
    return p
