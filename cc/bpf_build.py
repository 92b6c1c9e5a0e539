"""Compile this repo's BPF congestion controls against the running kernel's own BTF.

An object is one algorithm source, one kernel name and one parameter set (-D macros), built for one
kernel (vmlinux.h generated from /sys/kernel/btf/vmlinux, so CO-RE relocations match the tcp_sock
layout of the kernel that will run it). Objects are cached by the hash of everything that went in;
the object's own sha256 is what provenance records.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from configuration import CHECKOUT, environment

SOURCES = CHECKOUT / "cc" / "bpf"
# Headers an object may include: the BPF wrappers' own, and algorithms shared with the kernel
# wrappers (cc/ledbat/ledbat.h). Every header here is part of the object's cache key.
INCLUDE_DIRS = (SOURCES, CHECKOUT / "cc" / "ledbat")
KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,14}$")      # TCP_CA_NAME_MAX 16 incl. NUL; a C identifier
MACRO_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")


class BuildError(RuntimeError):
    """The object could not be built; the message says what is missing and the fix."""


@dataclass(frozen=True)
class BpfObject:
    path: Path
    kernel_name: str
    source: str
    defines: dict[str, int]
    sha256: str


def build_root() -> Path:
    """Per-checkout cache, or a private tmp dir where the checkout is read-only (the VM's view)."""
    override = environment.get("TCPREPRO_BPF_BUILD")
    if override:
        return Path(override)
    root = CHECKOUT / "build" / "bpf"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if os.access(root, os.W_OK):
            return root
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / "tcprepro-bpf"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class TargetKernel:
    """The kernel an object is built for: its release and its raw BTF."""
    release: str
    btf: bytes


def running_kernel() -> TargetKernel:
    if not KERNEL_BTF.exists():
        raise BuildError(f"{KERNEL_BTF} missing: this kernel has no BTF, so BPF congestion controls cannot be "
                         "built for it. Fix: boot a kernel with CONFIG_DEBUG_INFO_BTF=y (the workflow's pinned "
                         "Debian VM kernel has it)")
    return TargetKernel(Path("/proc/sys/kernel/osrelease").read_text().strip(), KERNEL_BTF.read_bytes())


def kernel_dir(kernel: TargetKernel | None = None, root: Path | None = None) -> Path:
    """<root>/<release>-<btf hash>/ holding that kernel's vmlinux.h (the running kernel's by default)."""
    kernel = kernel or running_kernel()
    d = (root or build_root()) / f"{kernel.release}-{_sha256(kernel.btf)[:12]}"
    header = d / "vmlinux.h"
    if not header.exists():
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, prefix=".btf-") as raw:
            raw.write(kernel.btf)
            raw.flush()
            proc = _run(["bpftool", "btf", "dump", "file", raw.name, "format", "c"], "bpftool")
        _atomic_write(header, proc.stdout)
    return d


def _run(argv: list[str], tool: str) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, capture_output=True)
    except FileNotFoundError:
        raise BuildError(f"{tool} not found: it builds the BPF congestion controls. Fix: make deps "
                         f"(Debian packages clang, llvm, libbpf-dev, bpftool)") from None
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(argv[:3])}... failed:\n{proc.stderr.decode(errors='replace').strip()[-2000:]}")
    return proc


def build(source: str, kernel_name: str, defines: dict[str, int] | None = None,
          kernel: TargetKernel | None = None, root: Path | None = None) -> BpfObject:
    """The object for `source` (a file in cc/bpf/) named `kernel_name` with `defines`, built if
    needed, for `kernel` (the running one by default) in the cache under `root`."""
    defines = dict(sorted((defines or {}).items()))
    if not NAME_RE.match(kernel_name):
        raise BuildError(f"BPF congestion-control name {kernel_name!r}: use 1-15 lowercase letters, digits or _ "
                         "starting with a letter (the kernel allows 15 characters)")
    for key, value in defines.items():
        if not MACRO_RE.match(key) or isinstance(value, bool) or not isinstance(value, int):
            raise BuildError(f"BPF parameter {key}={value!r}: parameters are integer macros named in capitals")
    src = SOURCES / source
    if not src.exists():
        raise BuildError(f"BPF source {src} missing")
    kdir = kernel_dir(kernel, root)
    headers = sorted(h for d in INCLUDE_DIRS for h in d.glob("*.h"))
    inputs = b"\0".join([src.read_bytes(), *(h.read_bytes() for h in headers),
                         (kdir / "vmlinux.h").read_bytes(), repr(sorted(defines.items())).encode(),
                         kernel_name.encode(), _clang_version().encode()])
    obj = kdir / f"{kernel_name}-{_sha256(inputs)[:16]}.o"
    if not obj.exists():
        tmp = obj.with_name(f".{obj.name}.{os.getpid()}.tmp")
        argv = ["clang", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf", "-D__TARGET_ARCH_x86",
                f"-I{kdir}", *(f"-I{d}" for d in INCLUDE_DIRS), f'-DCC_NAME="{kernel_name}"',
                f"-DOPS_VAR={kernel_name}",
                *(f"-D{k}={v}" for k, v in defines.items()), "-c", str(src), "-o", str(tmp)]
        try:
            _run(argv, "clang")
            os.replace(tmp, obj)
        finally:
            tmp.unlink(missing_ok=True)
    return BpfObject(obj, kernel_name, source, defines, _sha256(obj.read_bytes()))


_CLANG: str | None = None


def _clang_version() -> str:
    global _CLANG
    if _CLANG is None:
        _CLANG = _run(["clang", "--version"], "clang").stdout.decode().splitlines()[0]
    return _CLANG
