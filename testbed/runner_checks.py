"""Whether this host can start each lane's guests, whatever their kernels offer.

The VM lane needs QEMU, virtme-ng, the pinned kernel image and an accelerator (KVM, else TCG); the
UML lane its kernel (built, or buildable here), the tools its guest's init takes from the host, and
a checkout the guest can see. A lane whose runner cannot start serves no cell.
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from configuration import CHECKOUT
from testbed import uml, uml_kernel
from testbed.host_probes import which
from testbed.kernel_features import Check


def _runner_unavailable(exc: BaseException) -> Check:
    return Check("vm:runner", False, f"VM runner not available: {type(exc).__name__}: {exc}",
                 "testbed/vm_kernel.py must import (it provides pinned_kernel and kvm_usable)")


def vm_runner_checks() -> tuple[list[Check], str | None]:
    """QEMU, vng, the pinned kernel (its release, for the static checks) and KVM-or-TCG."""
    # deferred and guarded: a VM lane whose set-up cannot even be imported is reported as a failed
    # check, and the other lanes' checks still run
    try:
        from testbed import vm_kernel
    except Exception as exc:
        return [_runner_unavailable(exc)], None
    qemu, vng = which("qemu-system-x86_64"), which("vng")
    checks = [Check("vm:qemu", bool(qemu), qemu or "qemu-system-x86_64 not found",
                    "" if qemu else "make deps (Debian package qemu-system-x86)"),
              Check("vm:vng", bool(vng), vng or "vng not found", "" if vng else "make deps (PyPI virtme-ng)")]
    try:
        kernel = vm_kernel.pinned_kernel()
    except Exception as exc:
        fix = "make deps (Debian package linux-image-amd64)"
        return [*checks, Check("vm:kernel", False, str(exc), fix)], None
    checks.append(Check("vm:kernel", True, f"{kernel.release} ({kernel.path})"))
    if qemu:
        checks.append(_check_accel(vm_kernel))
    return checks, kernel.release


def _check_accel(vm_kernel: Any) -> Check:
    try:
        kvm = vm_kernel.kvm_usable()
    except Exception as exc:
        return Check("vm:accel", True, f"TCG (KVM test failed: {exc})")
    if kvm:
        return Check("vm:accel", True, "KVM")
    return Check("vm:accel", True, f"TCG, ~30 s boot (KVM unusable: {_kvm_reason(vm_kernel)})")


def _kvm_reason(vm_kernel: Any) -> str:
    """The first line of why the VM runner's cached KVM test failed, if it kept one."""
    with contextlib.suppress(AttributeError, OSError, ValueError, KeyError):
        detail = json.loads(Path(vm_kernel.KVM_CACHE).read_text())["detail"]
        return detail.splitlines()[0]
    return "see testbed/vm_kernel.py kvm_usable"


def uml_runner_checks() -> list[Check]:
    """The kernel (built, or buildable here: the workflow builds it first) and the tools a guest's
    init needs from the host."""
    built = uml_kernel.cached()
    if built is not None:
        kernel = Check("uml:kernel", True, f"{built.release} ({built.path})")
    else:
        missing = uml_kernel.missing_tools()
        kernel = (Check("uml:kernel", False, f"not built, and building it needs {', '.join(missing)}",
                        f"make deps (Debian packages {' '.join(missing)})") if missing else
                  Check("uml:kernel", True, "not built yet: the workflow builds it first (about 5 min on 2 cores; "
                        "python -m testbed.uml_kernel build)"))
    tools = [Check("uml:busybox", bool(which("busybox")), "the guest's init powers off with busybox",
                   "" if which("busybox") else "make deps (Debian package busybox-static)"),
             Check("uml:setpriv", bool(which("setpriv")), "ties a guest's life to its trial's",
                   "" if which("setpriv") else "make deps (Debian package util-linux)")]
    return [kernel, *tools, check_uml_checkout()]


def check_uml_checkout(checkout: Path = CHECKOUT) -> Check:
    """The guest reaches the checkout wherever it lies (testbed/uml.py); run as root, it does so as
    the unprivileged GUEST_USER, which must exist and be allowed to read what a job needs."""
    try:
        ids = uml.guest_ids()
    except uml.UmlError as exc:
        return Check("uml:checkout", False, str(exc).split("; fix:")[0], "make deps")
    if ids is None:
        return Check("uml:checkout", True, f"the guest runs as this user and sees {checkout} as {uml.GUEST_CHECKOUT}")
    built = uml_kernel.cached()
    bad = uml.unreadable_by_others(checkout, built.path if built else checkout)
    if bad:
        return Check("uml:checkout", False, f"run as root, the guest runs as {uml.GUEST_USER}, who cannot read "
                     f"{', '.join(map(str, bad))}", f"chmod -R o+rX {checkout}, or run as an unprivileged user")
    return Check("uml:checkout", True, f"run as root, the guest runs as {uml.GUEST_USER} (uid {ids[0]}) and sees "
                 f"{checkout} as {uml.GUEST_CHECKOUT}")
