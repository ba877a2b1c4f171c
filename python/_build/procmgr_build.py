"""procmgr's own PEP 517 build backend: standard library only, so that
`pip install` of the procmgr module downloads nothing (pip's build
isolation would fetch setuptools from PyPI, which compute nodes often
cannot reach). It builds a pure-Python wheel (py3-none-any) of the
procmgr/ directory beside it, an sdist, and an editable wheel (a .pth
naming this directory). The name, version, summary and Python range come
from pyproject.toml's [project] table, one `key = "value"` a line.

Writes only into the directory pip names: the source may be read-only (the
.deb's copy under /usr/share/procmgr/python)."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "procmgr"
# Reproducible archives: every entry dated as zip's earliest date.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    """pyproject.toml's [project] keys of the form key = "value"."""
    with open(os.path.join(_ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if m is None:
        raise RuntimeError("procmgr_build: no [project] table in pyproject.toml")
    fields = dict(re.findall(r'^([a-z-]+) = "([^"\n]*)"$', m.group(1), re.M))
    for key in ("name", "version", "description", "requires-python"):
        if key not in fields:
            raise RuntimeError('procmgr_build: [project] has no %s = "..." line' % key)
    return fields


def _dist_name(p):
    return "%s-%s" % (p["name"].replace("-", "_"), p["version"])


def _metadata(p):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            % (p["name"], p["version"], p["description"], p["requires-python"])).encode()


def _sources():
    """The package's files (relative paths, sorted): its modules and
    py.typed, no bytecode."""
    out = []
    for name in sorted(os.listdir(os.path.join(_ROOT, _PACKAGE))):
        if name.endswith(".py") or name == "py.typed":
            out.append(_PACKAGE + "/" + name)
    if _PACKAGE + "/__init__.py" not in out:
        raise RuntimeError("procmgr_build: no %s/__init__.py in %s" % (_PACKAGE, _ROOT))
    return out


def _read(rel):
    with open(os.path.join(_ROOT, rel), "rb") as f:
        return f.read()


def _dist_info(p):
    """The .dist-info directory's files but RECORD: (name, bytes)."""
    wheel = b"Wheel-Version: 1.0\nGenerator: procmgr_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return [("METADATA", _metadata(p)), ("WHEEL", wheel)]


def _wheel(wheel_directory, files):
    """A wheel of files ((archive name, bytes)) with its RECORD."""
    p = _project()
    info = _dist_name(p) + ".dist-info"
    files = files + [(info + "/" + n, data) for n, data in _dist_info(p)]
    record = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = _dist_name(p) + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            entry = zipfile.ZipInfo(name, _EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    info = _dist_name(p) + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, data in _dist_info(p):
        with open(os.path.join(metadata_directory, info, name), "wb") as f:
            f.write(data)
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(rel, _read(rel)) for rel in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The package used in place: a .pth putting this directory on sys.path."""
    return _wheel(wheel_directory, [(_PACKAGE + ".pth", (_ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = _dist_name(p)
    rel = ["pyproject.toml", "_build/procmgr_build.py"] + _sources()
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for name, data in [(r, _read(r)) for r in rel] + [("PKG-INFO", _metadata(p))]:
            entry = tarfile.TarInfo(base + "/" + name)
            entry.size, entry.mode, entry.mtime = len(data), 0o644, 0
            t.addfile(entry, io.BytesIO(data))
    return filename
