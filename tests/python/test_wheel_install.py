"""The wheel as a user gets it: ``pip install .`` into a fresh virtual environment puts everything
inside the ``ctshard/`` package directory (the extension, the C++ headers, the CMake package, the
static ``ctshard::registry``, ``py.typed``) and a ``ctshard`` console script on PATH; the command
line, ``python -m ctshard``, ``ctshard.include_dir()`` / ``ctshard.cmake_dir()`` (a CMake consumer
builds against them) work there; ``pip uninstall`` leaves site-packages and the venv's bin/ as
they were.

The venv sees the system site-packages for the build requirements (``--no-build-isolation``:
scikit-build-core, nanobind); the build reuses the checkout's build directory
(``build/python/<wheel tag>``, pyproject.toml), so it takes seconds after ``pip install .`` and
minutes from a cold tree (CMAKE_BUILD_PARALLEL_LEVEL, default 1 here, sets the jobs)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSION = re.search(r"project\(ctshard\s+VERSION\s+([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)

pytestmark = [
    pytest.mark.install,
    # the sanitizer build's run tests its instrumented extension from a build tree (PYTHONPATH),
    # with the ASan runtime preloaded into every process: no place for a wheel build
    pytest.mark.skipif(bool(os.environ.get("CTSHARD_REQUIRE_EXTENSION")), reason="the sanitizer build's Python run tests a build tree, not a wheel"),
]


def _run(*cmd: str | os.PathLike, timeout: float = 600, env: dict[str, str] | None = None, cwd: os.PathLike | None = None):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _tree(*dirs: pathlib.Path) -> set[str]:
    """Every path under ``dirs`` (relative to its dir, prefixed with the dir's name)."""
    return {f"{d.name}/{p.relative_to(d)}" for d in dirs for p in d.rglob("*")}


def test_fresh_venv_install_and_uninstall(tmp_path):
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--system-site-packages", venv)
    py = venv / "bin" / "python"
    site = pathlib.Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])").stdout.strip())
    bindir = venv / "bin"
    before = _tree(site, bindir)

    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "1")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run(py, "-m", "pip", "install", "-q", "--no-build-isolation", ROOT, timeout=3600, env=env)

    # only the package and its metadata at site-packages' top level, and one script in bin/
    new_top = {p.name for p in site.iterdir()} - {p.split("/")[1] for p in before if p.startswith(site.name + "/") and p.count("/") == 1}
    assert new_top == {"ctshard", f"ctshard-{VERSION}.dist-info"}, new_top
    new_bin = {p.name for p in bindir.iterdir()} - {p.split("/")[1] for p in before if p.startswith(bindir.name + "/")}
    assert new_bin == {"ctshard"}, new_bin
    pkg = site / "ctshard"
    assert (pkg / "py.typed").is_file()
    assert (site / f"ctshard-{VERSION}.dist-info" / "licenses" / "LICENSE").is_file() or \
        (site / f"ctshard-{VERSION}.dist-info" / "LICENSE").is_file()

    # the console script and python -m ctshard: the same command line
    done = _run(bindir / "ctshard", "--version", cwd=tmp_path)
    assert done.stdout == f"ctshard {VERSION}\n"
    cli_plan = json.loads(_run(py, "-m", "ctshard", "plan", "--json", "--quiet", cwd=tmp_path).stdout)
    script = ("import ctshard, json, os, sys\n"
              "print(json.dumps({'file': ctshard.__file__, 'include': ctshard.include_dir(), 'cmake': ctshard.cmake_dir(),\n"
              "                  'version': ctshard.__version__, 'plan': ctshard.plan()}))\n")
    seen = json.loads(_run(py, "-c", script, cwd=tmp_path).stdout)
    assert pathlib.Path(seen["file"]).parent == pkg
    assert seen["version"] == VERSION
    assert cli_plan["nodes_with_rule"] > 0 and cli_plan["mesh"] == [2, 4]
    assert [n["outputs"] for n in cli_plan["nodes"]] == [n["outputs"] for n in seen["plan"]["nodes"]]
    assert cli_plan["total_cost_us"] == seen["plan"]["total_cost_us"]
    include, cmake_dir = pathlib.Path(seen["include"]), pathlib.Path(seen["cmake"])
    assert include == pkg / "include" and (include / "ctshard" / "ctshard.hpp").is_file()
    assert cmake_dir.parent.parent.parent == pkg and (cmake_dir / "ctshardConfig.cmake").is_file()
    assert f'set(PACKAGE_VERSION "{VERSION}")' in (cmake_dir / "ctshardConfigVersion.cmake").read_text()

    # a C++ consumer finds the package where ctshard.cmake_dir() says (the header-only target)
    cmake = shutil.which("cmake")
    if cmake:
        _run(cmake, "-S", ROOT / "tests" / "install" / "consumer", "-B", tmp_path / "consumer", f"-Dctshard_DIR={cmake_dir}",
             "-DCMAKE_BUILD_TYPE=Release", timeout=300)
        _run(cmake, "--build", tmp_path / "consumer", "--target", "consumer", timeout=900)
        _run(tmp_path / "consumer" / "consumer")

    _run(py, "-m", "pip", "uninstall", "-y", "ctshard", env=env)
    after = _tree(site, bindir)
    # (pip's own byte-code caches may appear meanwhile: not the package's)
    left = sorted(p for p in after - before if "__pycache__" not in p or "ctshard" in p.lower())
    assert not left, f"left behind: {left[:20]}"
    assert not [p for p in after if "ctshard" in p.lower()]
    assert not before - after, f"removed: {sorted(before - after)[:20]}"
