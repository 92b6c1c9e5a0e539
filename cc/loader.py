"""Load a congestion control for a trial and unload it when the last trial using it ends.

Trials run side by side on one kernel and may share an algorithm, so loading is reference counted
with flocks, which the kernel drops when a holder dies, even by SIGKILL:
- `<name>.lock` (exclusive, held briefly) serialises the decision to load or unload;
- `<name>.hold` is held shared by every trial using the algorithm; whoever can take it exclusively
  is the last user and unloads;
- `<name>.json` says what tcprepro loaded (BPF object hash and struct_ops map id, or module), so
  nothing registered by someone else is ever unloaded, and a stale load (its holders all died) is
  swept by `python -m tcprepro cleanup`.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from configuration import environment

STATE_DIR = Path(environment.get("TCPREPRO_RUN_DIR", "/run/tcprepro") or "/run/tcprepro") / "cc"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


class LoadError(RuntimeError):
    """The algorithm could not be loaded; the message names the cause and the fix."""


def available() -> set[str]:
    return set(AVAILABLE.read_text().split())


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(STATE_DIR / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _state_file(name: str) -> Path:
    return STATE_DIR / f"{name}.json"


def loaded_by_us(name: str) -> dict[str, Any] | None:
    try:
        return json.loads(_state_file(name).read_text())
    except (OSError, ValueError):
        return None


def _unused(name: str) -> bool:
    """True if no live process holds `name` (probe with a non-blocking exclusive lock)."""
    fd = os.open(STATE_DIR / f"{name}.hold", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


# -- what loading means per implementation ----------------------------------------------------
def _bpftool(*args: str) -> str:
    proc = subprocess.run(["bpftool", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise LoadError(f"bpftool {' '.join(args)} failed: {(proc.stderr or proc.stdout).strip()[-1500:]}")
    return proc.stdout


def struct_ops_maps() -> list[dict[str, Any]]:
    """Registered struct_ops maps: [{id, name, kernel_struct_ops}]."""
    return json.loads(_bpftool("-j", "struct_ops", "show") or "[]")


def _register(name: str, obj: Path) -> int:
    try:
        _bpftool("struct_ops", "register", str(obj))
    except FileNotFoundError:
        raise LoadError("bpftool not found: it registers BPF congestion controls. Fix: make deps") from None
    except LoadError as exc:
        raise LoadError(f"the kernel refused BPF congestion control {name} ({obj.name}): {exc}. Fix: the kernel "
                        "needs CONFIG_BPF_JIT, CONFIG_DEBUG_INFO_BTF and struct_ops for tcp_congestion_ops "
                        "(Linux >= 5.6); `python -m tcprepro doctor` checks them") from None
    ids = [m["id"] for m in struct_ops_maps() if m.get("name") == name]
    if not ids or name not in available():
        raise LoadError(f"bpftool registered {obj.name} but the kernel does not list {name}")
    return max(ids)


def _unregister(state: dict[str, Any]) -> None:
    if any(m["id"] == state["map_id"] for m in struct_ops_maps()):
        _bpftool("struct_ops", "unregister", "id", str(state["map_id"]))


def _modprobe(module: str, params: dict[str, Any]) -> None:
    proc = subprocess.run(["modprobe", module, *(f"{k}={v}" for k, v in params.items())],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise LoadError(f"modprobe {module} failed: {proc.stderr.strip()}")


def _rmmod(module: str, patience_s: float = 5.0) -> bool:
    """Sockets of a torn-down namespace are destroyed asynchronously and hold the module until
    then: retry for a few seconds."""
    deadline = time.monotonic() + patience_s
    while subprocess.run(["rmmod", module], capture_output=True).returncode != 0:
        if not Path(f"/sys/module/{module}").exists():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _unload(name: str, state: dict[str, Any]) -> None:
    if state["impl"] == "bpf":
        _unregister(state)
    elif state["impl"] == "module" and not _rmmod(state["module"]):
        return      # still referenced (a socket not yet destroyed): the next sweep retries
    _state_file(name).unlink(missing_ok=True)


# -- the public interface -------------------------------------------------------------------
@contextlib.contextmanager
def holding(name: str, want: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Make kernel congestion control `name` available for the block, loading it as `want` says:
    {"impl": "bpf", "object": Path, "sha256": ...} or {"impl": "module", "module": ..., "params": {...}}.
    Yields the state as loaded (including who loaded it: this trial, or an earlier one still running)."""
    hold = _acquire(name, want)
    try:
        yield loaded_by_us(name) or {"impl": want["impl"], "preexisting": True}
    finally:
        _release(name, hold)


def _acquire(name: str, want: dict[str, Any]) -> int:
    with _locked(name):
        state = loaded_by_us(name)
        if state and _unused(name):
            _unload(name, state)            # a stale load from a killed trial, or an old build
            state = loaded_by_us(name)
        if name in available():
            if want["impl"] == "bpf" and not state:
                raise LoadError(f"a congestion control named {name} is already registered, not by tcprepro. Fix: "
                                f"`bpftool struct_ops unregister name {name}` if it is a leftover")
            if state and state.get("sha256") != want.get("sha256"):
                raise LoadError(f"{name} is registered from another build ({state.get('sha256', '')[:12]}) by a "
                                "trial still running; let it finish, then rerun")
        elif want["impl"] == "bpf":
            map_id = _register(name, Path(want["object"]))
            state = {"impl": "bpf", "map_id": map_id, "sha256": want["sha256"], "object": str(want["object"])}
            _state_file(name).write_text(json.dumps(state))
        elif want["impl"] == "module":
            _modprobe(want["module"], want.get("params") or {})
            if name not in available():
                raise LoadError(f"modprobe {want['module']} succeeded but the kernel does not list {name}")
            _state_file(name).write_text(json.dumps({"impl": "module", "module": want["module"]}))
        fd = os.open(STATE_DIR / f"{name}.hold", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH)
        return fd


def _release(name: str, hold: int) -> None:
    with _locked(name):
        os.close(hold)
        state = loaded_by_us(name)
        if state and _unused(name):
            _unload(name, state)


def sweep() -> list[str]:
    """Unload what tcprepro loaded and no live trial holds (left by a killed runner)."""
    removed: list[str] = []
    if not STATE_DIR.exists():
        return removed
    for f in sorted(STATE_DIR.glob("*.json")):
        name = f.stem
        with _locked(name):
            state = loaded_by_us(name)
            if state and _unused(name):
                _unload(name, state)
                if not _state_file(name).exists():
                    removed.append(f"congestion control {name} ({state['impl']})")
    return removed
