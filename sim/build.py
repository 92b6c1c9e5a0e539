"""Compile a simulation model of this repo (sim/<dir>/<model>.cc) into build/<dir>/<model>.

The binary is rebuilt when anything that went into it changes: the model's sources, the compile
command, the compiler, the ns-3 headers' version. A stamp beside it (<model>.json) records those
and the binary's sha256, which each trial's provenance carries. Several trials may ask at once:
the build holds a lock and renames the finished binary into place.

`python -m sim.build wlan_dcf` builds (or reuses) one model and prints its path.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from configuration import CHECKOUT

NS3_LIBS = ("wifi", "csma", "bridge", "internet", "applications", "mobility", "traffic-control", "network", "core")
NS3_HEADER = Path("/usr/include/ns3/wifi-module.h")
NS3_VERSION_HEADER = Path("/usr/include/ns3/version-defines.h")
# The model allocates a packet, a tag list and a few events per frame: tcmalloc's thread caches do
# that for less than glibc's malloc (docs/measurements.md). No result reads an address.
ALLOCATOR = "libtcmalloc_minimal.so.4"
FIX = ("make deps (Debian packages g++, libns3-dev and libtcmalloc-minimal4; "
       "`apt-get install g++ libns3-dev libtcmalloc-minimal4` as root)")


class BuildError(RuntimeError):
    """The model cannot be compiled here; the message names what is missing and the fix."""


@dataclass(frozen=True)
class Model:
    name: str                       # the binary's name and the main source's stem
    directory: str                  # sim/<directory>/ holds the sources
    sources: tuple[str, ...]        # every file that goes into the binary; the first is compiled
    adapter: str                    # the module a trial runs it through (command, flows, checks, metrics)

    @property
    def source_paths(self) -> list[Path]:
        return [CHECKOUT / "sim" / self.directory / s for s in self.sources]

    @property
    def binary(self) -> Path:
        return CHECKOUT / "build" / self.directory / self.name


MODELS = {"wlan_dcf": Model("wlan_dcf", "wlan", ("wlan_dcf.cc", "wlan_dataack_queue_disc.h"), "sim.wlan.model")}


def adapter(name: str) -> ModuleType:
    """The trial adapter of model `name`: RAW, command(), flows(), problems(), checks(). A trial's
    summary is analysis's (testbed/simulate.py `SUMMARIES`), not the adapter's."""
    return importlib.import_module(model(name).adapter)


def read_output(path: Path) -> dict[str, Any]:
    """A model's raw counters (its adapter's RAW file). The model does not check its own write: a run
    that exited 0 with the file missing, empty or cut short (a full disk) is named here (RuntimeError),
    not taken for a result."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise RuntimeError(f"the model exited 0 but its {path.name} cannot be read ({exc.strerror})") from None
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise RuntimeError(f"the model exited 0 but wrote {len(text.encode())} bytes of {path.name} that are not "
                           "its JSON object (a full disk or a failed write?)")
    return raw


@dataclass(frozen=True)
class Binary:
    """A built model, as provenance records it."""

    path: Path
    sha256: str
    sources_sha256: str
    compiler: str
    ns3_package: str
    command: list[str]
    model_source: str               # the main source, relative to the checkout

    def provenance(self) -> dict[str, object]:
        return {"binary": str(self.path.relative_to(CHECKOUT)), "binary_sha256": self.sha256,
                "sources_sha256": self.sources_sha256, "compiler": self.compiler,
                "package": self.ns3_package, "build_command": self.command, "model": self.model_source}


def model(name: str) -> Model:
    if name not in MODELS:
        raise BuildError(f"no simulation model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]


def _first_line(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 and out.stdout else ""


def prerequisites() -> tuple[str, str]:
    """(compiler version, ns-3 package version), or BuildError naming what is missing and the fix."""
    missing = []
    gxx = shutil.which("g++")
    if gxx is None:
        missing.append("g++ (not on PATH)")
    if not NS3_HEADER.exists():
        missing.append(f"the ns-3 headers ({NS3_HEADER})")
    if gxx is not None:
        found = _first_line(["g++", "-print-file-name=libns3-wifi.so"])
        if not found.startswith("/"):
            missing.append("the ns-3 libraries (libns3-wifi.so not found by g++)")
        if not _first_line(["g++", f"-print-file-name={ALLOCATOR}"]).startswith("/"):
            missing.append(f"tcmalloc ({ALLOCATOR} not found by g++)")
    if missing:
        raise BuildError(f"cannot compile the ns-3 model: missing {', '.join(missing)}. Fix: {FIX}")
    package = _first_line(["dpkg-query", "-W", "-f", "libns3-dev ${Version}\n", "libns3-dev"])
    if not package:
        package = "ns-3 headers sha256:" + hashlib.sha256(NS3_VERSION_HEADER.read_bytes()).hexdigest()[:16] \
            if NS3_VERSION_HEADER.exists() else "unknown"
    return _first_line(["g++", "--version"]), package


def compile_command(m: Model, out: Path) -> list[str]:
    main = m.source_paths[0]
    return ["g++", "-O2", "-std=c++17", str(main.relative_to(CHECKOUT)), "-o", str(out.relative_to(CHECKOUT)),
            *(f"-lns3-{lib}" for lib in NS3_LIBS), "-Wl,--no-as-needed", f"-l:{ALLOCATOR}"]


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _inputs_sha256(m: Model, command: list[str], compiler: str, package: str) -> str:
    h = hashlib.sha256()
    for path in m.source_paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(json.dumps([command, compiler, package]).encode())
    return h.hexdigest()


def sources_sha256(name: str) -> str:
    """The digest of a model's sources as the checkout holds them, as a trial's provenance records
    the sources it ran (staleness: analysis/report/provenance.py)."""
    return _sources_sha256(model(name))


def _sources_sha256(m: Model) -> str:
    h = hashlib.sha256()
    for path in m.source_paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _fresh(m: Model, inputs: str) -> dict[str, str] | None:
    stamp = m.binary.with_suffix(".json")
    with contextlib.suppress(OSError, ValueError, KeyError):
        data = json.loads(stamp.read_text())
        if data["inputs_sha256"] == inputs and m.binary.exists() and _sha256_file(m.binary) == data["binary_sha256"]:
            return data
    return None


def ensure(name: str, force: bool = False, log: bool = True) -> Binary:
    """The model's binary, compiled now if it is missing or out of date."""
    m = model(name)
    compiler, package = prerequisites()
    command = compile_command(m, m.binary)
    inputs = _inputs_sha256(m, command, compiler, package)
    with _locked(m.binary.parent):
        stamp = None if force else _fresh(m, inputs)
        if stamp is None:
            tmp = m.binary.with_name(f".{m.name}.{os.getpid()}.tmp")
            tmp_command = compile_command(m, tmp)
            if log:
                print(f"compiling {m.source_paths[0].relative_to(CHECKOUT)} -> {m.binary.relative_to(CHECKOUT)}",
                      file=sys.stderr)
            try:        # an interrupted or failed compile leaves no half-written file behind
                proc = subprocess.run(tmp_command, cwd=CHECKOUT, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise BuildError(f"g++ failed ({proc.returncode}) on "
                                     f"{m.source_paths[0].relative_to(CHECKOUT)}:\n{proc.stderr.strip()[-2000:]}")
                os.replace(tmp, m.binary)
            finally:
                tmp.unlink(missing_ok=True)
            stamp = {"inputs_sha256": inputs, "binary_sha256": _sha256_file(m.binary)}
            m.binary.with_suffix(".json").write_text(json.dumps(stamp, indent=1) + "\n")
    return Binary(m.binary, stamp["binary_sha256"], _sources_sha256(m), compiler, package, command,
                  str(m.source_paths[0].relative_to(CHECKOUT)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sim.build", description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    a = ap.parse_args(argv)
    try:
        binary = ensure(a.model, a.force)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # The workflow's rule depends on the binary's time stamp: a reused binary is marked current.
    os.utime(binary.path)
    print(json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(binary).items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
