"""A PEP 517 build backend for the fencegate package, standard library only.

pip builds a package in an isolated environment into which it installs
the backend's requirements from an index; a backend in the tree that
requires nothing needs no index, so `pip install ./clients/python` works
offline on any Python with pip. It builds one pure-Python wheel (the
fencegate package, its METADATA from pyproject.toml, RECORD with hashes),
an sdist, and an editable wheel (a .pth file naming the source folder).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "fencegate"


def _project():
    """name, version, description, requires-python and the pg extra, read
    from pyproject.toml's [project] table (the few keys this file writes)."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def key(name):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(name), table, re.M)
        if not m:
            raise ValueError("pyproject.toml: [project] has no %s" % name)
        return m.group(1)
    extras = re.findall(r'"([^"]+)"', text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0])
    return key("name"), key("version"), key("description"), key("requires-python"), extras


def _metadata():
    name, version, summary, python, pg = _project()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version, "Summary: " + summary,
             "License: Apache-2.0", "Requires-Python: " + python, "Provides-Extra: pg"]
    lines += ['Requires-Dist: %s; extra == "pg"' % d for d in pg]
    lines += ["Description-Content-Type: text/markdown", "", readme]
    return name, version, ("\n".join(lines)).encode("utf-8")


def _sources():
    """The package's .py files: (path on disk, path in the archive), sorted."""
    out = []
    for d, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(d, f)
                out.append((p, os.path.relpath(p, ROOT).replace(os.sep, "/")))
    return out


def _wheel(directory, files):
    """Write a wheel of files ((archive path, bytes) pairs) and return its name."""
    name, version, metadata = _metadata()
    dist = "%s-%s.dist-info" % (name, version)
    wheel = "%s-%s-py3-none-any.whl" % (name, version)
    files = list(files) + [(dist + "/METADATA", metadata),
                           (dist + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: fencegate_build\n"
                                             b"Root-Is-Purelib: true\nTag: py3-none-any\n")]
    record = []
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), data)
            h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, h, len(data)))
        record.append(dist + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(dist + "/RECORD", (2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return wheel


def get_requires_for_build_wheel(config_settings=None):
    """Nothing: the backend is the standard library."""
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """The wheel of the package's sources."""
    files = []
    for path, arc in _sources():
        with open(path, "rb") as f:
            files.append((arc, f.read()))
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth file puts the source folder on sys.path."""
    return _wheel(wheel_directory, [("fencegate_editable.pth", (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    """The source distribution: pyproject.toml, README.md, the backend, the package."""
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    out = base + ".tar.gz"
    paths = [(os.path.join(ROOT, p), p) for p in ("pyproject.toml", "README.md", "_build/fencegate_build.py")]
    with tarfile.open(os.path.join(sdist_directory, out), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, arc in paths + _sources():
            t.add(path, base + "/" + arc, recursive=False)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(metadata)
        t.addfile(info, io.BytesIO(metadata))
    return out
