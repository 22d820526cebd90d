"""One version source: the ``project(ctshard VERSION ...)`` line of CMakeLists.txt. The Python
package (``ctshard.__version__``, from the extension's build), its installed metadata (read from
CMakeLists.txt by scikit-build-core's regex provider), ``ctshard --version`` (the tool and the
console script ``python -m ctshard``) all give it. The CMake package's version file is checked by
tests/install/check_install.cmake."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess
import sys

import pytest

import ctshard

ROOT = pathlib.Path(__file__).resolve().parents[2]
_MATCH = re.search(r"project\(ctshard\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", (ROOT / "CMakeLists.txt").read_text())
assert _MATCH, "CMakeLists.txt has no project(ctshard VERSION x.y.z) line"
VERSION = _MATCH.group(1)


def test_python_version_is_the_cmake_project_version():
    assert ctshard.__version__ == VERSION
    assert ctshard._ext.__version__ == VERSION


def test_installed_metadata_has_the_cmake_project_version():
    try:
        dist = importlib.metadata.distribution("ctshard")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ctshard is imported from a build tree, not installed")
    init = pathlib.Path(ctshard.__file__).resolve()
    if not any(pathlib.Path(dist.locate_file(f)).resolve() == init for f in dist.files or ()):
        pytest.skip(f"the installed ctshard ({dist.locate_file('')}) is not the one imported ({init})")
    assert dist.version == VERSION
    assert dist.metadata["License"] == "Apache-2.0"


def test_tool_prints_the_version(tool):
    done = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"ctshard {VERSION}\n", "")


def test_console_module_prints_the_version():
    done = subprocess.run([sys.executable, "-m", "ctshard", "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"ctshard {VERSION}\n", "")
