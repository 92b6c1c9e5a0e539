"""The kernel the VM lane boots, and whether KVM can boot it here or QEMU must emulate (TCG).

Every VM trial runs on one pinned Debian 6.1 kernel, found among the installed images. KVM makes
a boot take seconds instead of ~30 s, but an openable /dev/kvm does not prove a guest boots, so a
tiny guest is really booted once per host boot and the answer cached.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from configuration import environment
from testbed import vng
from testbed.process_groups import kill_group
from testbed.vm_errors import KernelNotFoundError

KVM_CACHE = Path("/run/tcprepro/kvm.json")
# PVM (pagetable-based virtual machine): KVM without VT-x, for hosts that are themselves guests.
# It runs PVM-enabled guest kernels; a stock kernel stops early on instructions it cannot emulate.
PVM_MODULE = Path("/sys/module/kvm_pvm")
PINNED_GLOB = "vmlinuz-6.1.*-amd64"


@dataclass(frozen=True)
class KernelImage:
    path: Path
    release: str


def _version_key(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release))


def pinned_kernel(boot: Path = Path("/boot")) -> KernelImage:
    """The newest installed Debian 6.1 kernel: the one every VM trial runs on."""
    images = sorted(boot.glob(PINNED_GLOB), key=lambda p: _version_key(p.name))
    if not images:
        raise KernelNotFoundError(
            f"no pinned kernel {boot}/{PINNED_GLOB}: run `make deps` (installs linux-image-amd64)"
        )
    image = images[-1]
    return KernelImage(path=image, release=image.name.removeprefix("vmlinuz-"))


def _host_boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def kvm_usable(kernel: KernelImage | None = None, timeout: float = 40.0) -> bool:
    """Whether a KVM guest really boots here (an openable /dev/kvm is not enough: guests hang
    or abort on some hosts). Probed once per host boot and cached; TCPREPRO_VM_ACCEL overrides."""
    override = environment.get("TCPREPRO_VM_ACCEL", "") or ""
    if override:
        if override not in ("kvm", "tcg"):
            raise ValueError(f"TCPREPRO_VM_ACCEL={override!r}: use kvm or tcg")
        return override == "kvm"
    boot_id = _host_boot_id()
    with contextlib.suppress(OSError, ValueError):
        cached = json.loads(KVM_CACHE.read_text())
        if cached.get("boot_id") == boot_id:
            return bool(cached["usable"])
    usable, detail = _probe_kvm(kernel or pinned_kernel(), timeout)
    with contextlib.suppress(OSError):
        KVM_CACHE.parent.mkdir(parents=True, exist_ok=True)
        KVM_CACHE.write_text(json.dumps({"boot_id": boot_id, "usable": usable, "detail": detail,
                                         "checked_at": time.time()}))
    return usable


def _probe_kvm(kernel: KernelImage, timeout: float) -> tuple[bool, str]:
    """Boot a tiny KVM guest; it must finish in time and see the kvm clock (else QEMU fell back
    to TCG silently)."""
    if PVM_MODULE.exists():
        # Measured on this project's machine (2026-11-23): the Debian 6.1 kernel, booted directly,
        # stops with "KVM internal error ... emulation failure" at lock cmpxchg16b (SLUB) and,
        # with -cpu host,-cx16, at xrstor; its bzImage never gets past the decompressor.
        return False, (f"/dev/kvm is PVM ({PVM_MODULE} loaded): it boots only PVM-enabled guest "
                       "kernels, and the pinned Debian kernel is not one")
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError as exc:
        return False, f"/dev/kvm: {exc}"
    cmd = [vng.binary(), "--run", str(kernel.path), "--force-9p", "--cpus", "1", "--memory", "512M",
           "--user", "root", "--cwd", "/",
           "--exec", "cat /sys/devices/system/clocksource/clocksource0/available_clocksource"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, env=vng.env(), cwd="/")
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.wait()
        return False, f"KVM guest did not finish within {timeout:.0f} s"
    text = out.decode(errors="replace")
    if proc.returncode == 0 and "kvm-clock" in text:
        return True, "KVM guest booted"
    return False, f"KVM guest failed (exit {proc.returncode}): {text.strip()[-300:]}"


def select_accel(kernel: KernelImage | None = None) -> str:
    return "kvm" if kvm_usable(kernel) else "tcg"
