"""Resolve a paper's congestion-control name to what serves it on the running kernel.

Builtin if the kernel lists it, else a loadable module (loaded with the papers' parameters).
Names with no implementation here fail with the missing feature and the fix.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tcprepro import CHECKOUT

REGISTRY_PATH = CHECKOUT / "config" / "congestion_controls.yaml"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


class CcUnavailable(RuntimeError):
    """The kernel cannot provide this congestion control; the message says what is missing."""


@dataclass(frozen=True)
class CcChoice:
    name: str
    kernel_name: str
    impl: str                      # builtin | module
    params: dict[str, Any] = field(default_factory=dict)


def registry() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(REGISTRY_PATH.read_text())


def entry(name: str) -> dict[str, Any]:
    reg = registry()
    if name not in reg:
        raise CcUnavailable(f"unknown congestion control {name!r}: known are {', '.join(reg)} "
                            f"(config/congestion_controls.yaml)")
    return reg[name]


def available() -> set[str]:
    return set(AVAILABLE.read_text().split())


def modules_loadable() -> bool:
    """A kernel built without module support has no /proc/modules."""
    return Path("/proc/modules").exists()


def _module_file(module: str, release: str) -> Path | None:
    hits = list(Path(f"/lib/modules/{release}").rglob(f"{module}.ko*"))
    return hits[0] if hits else None


def running_release() -> str:
    return Path("/proc/sys/kernel/osrelease").read_text().strip()


def how_available(name: str, release: str | None = None) -> tuple[str | None, str]:
    """(impl or None, detail) for `name` on the running kernel, or statically for an installed
    kernel `release` (its /boot/config and /lib/modules), without loading anything."""
    e = entry(name)
    if release and release != running_release():
        return _how_available_installed(e, release)
    release = running_release()
    if e["kernel_name"] in available():
        return "builtin", f"{e['kernel_name']} listed by the kernel"
    module = e.get("module")
    if module and modules_loadable() and _module_file(module, release):
        return "module", f"module {module} in /lib/modules/{release}"
    why = "no loadable modules on this kernel" if not modules_loadable() else f"no {module}.ko for {release}"
    return None, f"{e['kernel_name']} not built in; {why}"


def _how_available_installed(e: dict[str, Any], release: str) -> tuple[str | None, str]:
    module = e.get("module")
    config = Path(f"/boot/config-{release}")
    symbol = f"CONFIG_TCP_CONG_{e['kernel_name'].upper()}=y"
    if e.get("builtin") or (config.exists() and symbol in config.read_text()):
        return "builtin", f"built into {release}"
    if module and _module_file(module, release):
        return "module", f"module {module} of {release}"
    return None, f"{release} has neither {e['kernel_name']} built in nor module {module}"


def _is_loaded_module(module: str | None) -> bool:
    """Loadable modules have an initstate in sysfs; built-in ones with parameters do not."""
    return bool(module) and Path(f"/sys/module/{module}/initstate").exists()


def resolve(name: str) -> CcChoice:
    """Make `name` usable on this kernel (loading its module if needed) and say how."""
    e = entry(name)
    params = dict(e.get("module_params") or {})
    if e["kernel_name"] in available():
        # A builtin or already-loaded module: its parameters are whatever the kernel has now.
        impl = "module" if _is_loaded_module(e.get("module")) else "builtin"
        if impl == "module" and params:
            params = _read_module_params(e["module"], params)
        return CcChoice(name, e["kernel_name"], impl, params if impl == "module" else {})
    impl, detail = how_available(name)
    if impl != "module":
        raise CcUnavailable(f"congestion control {name!r} unavailable: {detail}. Fix: run on a kernel that "
                            f"has it (the workflow's VM runs the pinned Debian kernel, which has module "
                            f"{e.get('module')}); `python -m tcprepro doctor` shows what this kernel has")
    args = ["modprobe", e["module"], *(f"{k}={v}" for k, v in params.items())]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0 or e["kernel_name"] not in available():
        raise CcUnavailable(f"loading {e['module']} failed: {proc.stderr.strip() or 'not listed after load'}")
    return CcChoice(name, e["kernel_name"], "module", _read_module_params(e["module"], params))


def _read_module_params(module: str, wanted: dict[str, Any]) -> dict[str, Any]:
    """The values the kernel really has, so provenance records facts, not intentions."""
    out: dict[str, Any] = {}
    for key, want in wanted.items():
        f = Path(f"/sys/module/{module}/parameters/{key}")
        out[key] = f.read_text().strip() if f.exists() else f"absent (wanted {want})"
    return out
