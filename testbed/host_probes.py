"""What this host's running kernel and tools offer a trial, asked live.

The running kernel is asked, not read about: each qdisc is really added to a veth in a scratch
namespace, because a config file or a module list can say yes while the kernel says no. A kernel's
features change only when it is rebooted, so the kernel probe and the BPF probe (which builds and
registers a congestion control) are cached per boot.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cc import bpf_build, loader
from cc import registry as cc_registry
from configuration import environment
from sim import build
from testbed.cleanup import pid_alive
from testbed.kernel_features import BOOT_PARAMS, BOOT_PARAMS_FIX, KERNEL_OPTIONS, QDISCS, Check, KernelOption, cc_names

RUN_DIR = Path(environment.get("TCPREPRO_RUN_DIR", "/run/tcprepro") or "/run/tcprepro")
CACHE_PATH = RUN_DIR / "host-features.json"
BPF_CACHE_PATH = RUN_DIR / "host-bpf-probe.json"
PROBE_CC = "trp_probe"        # the congestion control doctor registers to prove the BPF path works
TRACEFS = Path("/sys/kernel/tracing")
TCP_PROBE_FORMAT = TRACEFS / "events" / "tcp" / "tcp_probe" / "format"
BTF = Path("/sys/kernel/btf/vmlinux")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
NETNS_DIR = Path("/run/netns")
# Scratch names: the pid suffix lets a later run delete what a killed run left behind.
NETNS_PREFIX = "tcprepro-doctor-"
VETH = ("tcprdoc0", "tcprdoc1")
LINK_KINDS = ("ifb", "bridge")
# Command -> the Debian package (config/system-packages.txt) that installs it.
# iperf is iperf2: the default bulk generator (config/workflow.yaml) and every fixed-size flow's.
TOOLS = {"ip": "iproute2", "tc": "iproute2", "iperf": "iperf", "iperf3": "iperf3", "ping": "iputils-ping",
         "ethtool": "ethtool", "tcpdump": "tcpdump", "tcptrace": "tcptrace",
         "ovs-vswitchd": "openvswitch-switch", "ovs-vsctl": "openvswitch-switch",
         "ovsdb-server": "openvswitch-common", "ovsdb-tool": "openvswitch-common",
         "ovs-appctl": "openvswitch-common"}


class ProbeError(RuntimeError):
    """The scratch namespace could not be made, so no kernel probe could run."""


def _run(*args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    """Run a command; a missing binary or a hang reads as a failed command, not a crash."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(args, 127, "", str(exc))


def _err(proc: subprocess.CompletedProcess[str]) -> str:
    text = (proc.stderr or proc.stdout).strip().splitlines()
    return text[-1].removeprefix("Error: ") if text else f"exit status {proc.returncode}"


def sweep_stale_namespaces() -> list[str]:
    """Delete scratch namespaces of doctor runs that died before their cleanup ran."""
    removed = []
    for entry in NETNS_DIR.glob(f"{NETNS_PREFIX}*") if NETNS_DIR.is_dir() else ():
        pid = entry.name.removeprefix(NETNS_PREFIX)
        if pid.isdigit() and not pid_alive(int(pid)):
            _run("ip", "netns", "delete", entry.name)
            removed.append(entry.name)
    return removed


@contextlib.contextmanager
def scratch_namespace() -> Iterator[str]:
    """A namespace that exists only for the block: deleting it deletes every link made inside."""
    name = f"{NETNS_PREFIX}{os.getpid()}"
    proc = _run("ip", "netns", "add", name)
    if proc.returncode != 0:
        raise ProbeError(f"ip netns add failed: {_err(proc)}")
    try:
        yield name
    finally:
        _run("ip", "netns", "delete", name)


def _probe_veth(ns: str) -> Check:
    proc = _run("ip", "-n", ns, "link", "add", "name", VETH[0], "type", "veth", "peer", "name", VETH[1])
    if proc.returncode == 0:
        return Check("netns+veth", True, "made a namespace and a veth pair, then deleted them")
    return Check("netns+veth", False, f"veth: {_err(proc)}", "boot a kernel with CONFIG_VETH")


def _modules_loadable() -> bool:
    return cc_registry.modules_loadable()


def _kernel_fix(options: Iterable[KernelOption]) -> str:
    """Host-side fix for a missing kernel feature: load its module if this kernel can, else rebuild."""
    options = list(options)
    modules = [o.module for o in options if o.module]
    if modules and _modules_loadable():
        return "modprobe " + " ".join(modules)
    return "boot a kernel with " + " and ".join(f"CONFIG_{o.symbol}" for o in options)


def _probe_qdisc(ns: str, kind: str) -> Check:
    qdisc = QDISCS[kind]
    proc = _run("tc", "-n", ns, "qdisc", "add", "dev", VETH[0], *qdisc.tc_args)
    if proc.returncode != 0:
        return Check(f"qdisc:{kind}", False, f"tc qdisc add {kind}: {_err(proc)}",
                     _kernel_fix([qdisc.option]))
    _run("tc", "-n", ns, "qdisc", "del", "dev", VETH[0], "ingress" if kind == "ingress" else "root")
    return Check(f"qdisc:{kind}", True, "tc qdisc add accepted")


def _probe_link(ns: str, kind: str) -> Check:
    proc = _run("ip", "-n", ns, "link", "add", "name", f"tcprdoc-{kind}", "type", kind)
    if proc.returncode != 0:
        return Check(kind, False, f"ip link add type {kind}: {_err(proc)}", _kernel_fix(KERNEL_OPTIONS[kind]))
    return Check(kind, True, f"ip link add type {kind} accepted")


def probe_ovs_datapath() -> Check:
    """Open vSwitch's kernel datapath registers the generic netlink family ovs_datapath."""
    proc = _run("genl", "ctrl", "get", "name", "ovs_datapath")
    if proc.returncode == 0:
        return Check("switch:ovs", True, "generic netlink family ovs_datapath registered")
    return Check("switch:ovs", False, f"no ovs_datapath netlink family: {_err(proc)}",
                 _kernel_fix(KERNEL_OPTIONS["switch:ovs"]) + ", or run the cell on the virtual-time lane "
                 "(make uml-kernel), whose kernel has it built in")


def kernel_probe_names() -> list[str]:
    return ["netns+veth", *(f"qdisc:{k}" for k in QDISCS), *LINK_KINDS, "switch:ovs"]


def probe_kernel() -> list[Check]:
    """Really try each kernel feature in a scratch namespace (well under a second)."""
    sweep_stale_namespaces()
    try:
        with scratch_namespace() as ns:
            veth = _probe_veth(ns)
            if veth.ok:
                qdiscs = [_probe_qdisc(ns, kind) for kind in QDISCS]
            else:
                qdiscs = [Check(f"qdisc:{k}", False, "not tried: no veth", veth.fix) for k in QDISCS]
            return [veth, *qdiscs, *(_probe_link(ns, kind) for kind in LINK_KINDS), probe_ovs_datapath()]
    except ProbeError as exc:
        fix = "run as root" if os.geteuid() != 0 else "boot a kernel with CONFIG_NET_NS"
        return [Check(name, False, f"not tried: {exc}", fix) for name in kernel_probe_names()]


def _cache_key() -> dict[str, Any]:
    boot_id = BOOT_ID.read_text().strip() if BOOT_ID.exists() else "unknown"
    return {"boot_id": boot_id, "release": cc_registry.running_release(), "probes": kernel_probe_names()}


def cached_probe_kernel(refresh: bool = False) -> list[Check]:
    """probe_kernel() once per boot: a kernel's features change only when it is rebooted."""
    key = _cache_key()
    if not refresh:
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            data = json.loads(CACHE_PATH.read_text())
            if data["key"] == key:
                return [Check(**c) for c in data["checks"]]
    checks = probe_kernel()
    if os.geteuid() == 0 and not any("not tried" in c.detail for c in checks):
        _write_cache(key, checks)
    return checks


def _write_cache(key: dict[str, Any], checks: list[Check]) -> None:
    with contextlib.suppress(OSError):
        CACHE_PATH.parent.mkdir(parents=True, exist_ok=True)
        tmp = CACHE_PATH.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "checks": [asdict(c) for c in checks]}, indent=1))
        tmp.replace(CACHE_PATH)


def check_root() -> Check:
    if os.geteuid() == 0:
        return Check("root", True, "running as root")
    return Check("root", False, f"running as uid {os.geteuid()}; namespaces and qdiscs need root",
                 "run as root (sudo make doctor)")


def check_sysctl_writable(path: Path = Path("/proc/sys/net/ipv4/ip_forward")) -> Check:
    """Trials write sysctls (forwarding, the papers' TCP settings) under /proc/sys, which an
    unprivileged container mounts read-only: there the VM, with a procfs of its own, must serve."""
    if os.access(path, os.W_OK):
        return Check("sysctl:writable", True, "/proc/sys is writable")
    return Check("sysctl:writable", False, "/proc/sys is read-only (an unprivileged container?)",
                 "docker run --privileged, or leave TCPREPRO_KERNEL unset: the VM has its own /proc/sys")


def _readable_dir(path: Path) -> bool | None:
    """Whether `path` is a directory; None when this user may not look (tracefs is root's)."""
    try:
        return path.is_dir()
    except PermissionError:
        return None


def check_tracefs() -> Check:
    """tracefs must be mounted for the tracepoint; mount it if it is not (that is the fix anyway)."""
    fix = f"mount -t tracefs nodev {TRACEFS}"
    seen = _readable_dir(TRACEFS / "events")
    if seen is None:
        return Check("tracefs", False, f"{TRACEFS} is not readable as uid {os.geteuid()}", "run as root")
    if seen:
        return Check("tracefs", True, f"mounted at {TRACEFS}")
    if os.geteuid() != 0:
        return Check("tracefs", False, f"not mounted at {TRACEFS}", f"as root: {fix}")
    proc = _run("mount", "-t", "tracefs", "nodev", str(TRACEFS))
    if proc.returncode == 0 and (TRACEFS / "events").is_dir():
        return Check("tracefs", True, f"was not mounted: mounted it at {TRACEFS}")
    return Check("tracefs", False, f"mount failed: {_err(proc)}", "boot a kernel with CONFIG_TRACING; " + fix)


def check_tracepoint() -> Check:
    name = "tracepoint:tcp_probe"
    if _readable_dir(TRACEFS / "events") is None:
        return Check(name, False, f"{TRACEFS} is not readable as uid {os.geteuid()}", "run as root")
    if TCP_PROBE_FORMAT.exists():
        return Check(name, True, f"{TCP_PROBE_FORMAT.parent} present")
    if not (TRACEFS / "events").is_dir():
        return Check(name, False, "tracefs not mounted", f"mount -t tracefs nodev {TRACEFS}")
    return Check(name, False, "no events/tcp/tcp_probe in tracefs",
                 "boot a kernel >= 4.16 with CONFIG_EVENT_TRACING")


def check_modules() -> Check:
    if _modules_loadable():
        return Check("modules", True, "loadable modules supported")
    return Check("modules", False, "kernel built without module support (no /proc/modules)",
                 "only built-in features are usable; boot a kernel with CONFIG_MODULES")


def which(command: str) -> str | None:
    """Like `which`, but also in sbin (non-root PATHs omit it) and in this venv's bin (vng)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", str(Path(sys.prefix) / "bin")])
    return shutil.which(command, path=path)


def check_tool(command: str) -> Check:
    found = which(command)
    if found:
        return Check(f"tool:{command}", True, found)
    return Check(f"tool:{command}", False, f"{command} not found",
                 f"make deps (Debian package {TOOLS[command]})")


def check_mininet() -> Check:
    try:
        net = importlib.import_module("mininet.net")
        importlib.import_module("mininet.nodelib")
    except Exception as exc:
        return Check("tool:mininet", False, f"import mininet failed: {exc}",
                     "make deps (Debian package mininet), then use .venv/bin/python, which sees it")
    return Check("tool:mininet", True, f"Mininet {getattr(net, 'VERSION', '?')} importable")


def check_ns3() -> Check:
    """What a simulated paper needs: the ns-3 headers and libraries and g++ (sim/build.py)."""
    try:
        compiler, package = build.prerequisites()
    except build.BuildError as exc:
        return Check("tool:ns3", False, str(exc).split(". Fix:")[0], build.FIX)
    return Check("tool:ns3", True, f"{package}; {compiler}")


def check_bpf_prereqs(refresh: bool = False) -> Check:
    """Prerequisites, then the real thing once per boot: build cc/bpf/probe.bpf.c against this
    kernel's BTF, register it as a struct_ops congestion control, see it listed, unregister it."""
    missing = [what for what, ok in (("BTF " + str(BTF), BTF.exists()), ("bpftool", which("bpftool")),
                                     ("clang", which("clang"))) if not ok]
    if missing:
        fix = "make deps (Debian packages clang, bpftool)" if BTF.exists() else \
            "boot a kernel with CONFIG_DEBUG_INFO_BTF; make deps (clang, bpftool)"
        return Check("bpf:struct_ops", False, f"missing: {', '.join(missing)}", fix)
    key = {**_cache_key(), "probes": ["bpf:struct_ops"]}
    if not refresh:
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            data = json.loads(BPF_CACHE_PATH.read_text())
            if data["key"] == key:
                return Check(**data["check"])
    check = _probe_struct_ops()
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            BPF_CACHE_PATH.parent.mkdir(parents=True, exist_ok=True)
            BPF_CACHE_PATH.write_text(json.dumps({"key": key, "check": asdict(check)}))
    return check


def _probe_struct_ops() -> Check:
    fix = ("boot a kernel with CONFIG_BPF_SYSCALL, CONFIG_BPF_JIT, CONFIG_DEBUG_INFO_BTF (>= 5.6 for "
           "tcp_congestion_ops struct_ops), or run in the workflow's VM")
    try:
        obj = bpf_build.build("probe.bpf.c", PROBE_CC)
        with loader.holding(PROBE_CC, {"impl": "bpf", "object": str(obj.path), "sha256": obj.sha256}):
            listed = PROBE_CC in loader.available()
    except (bpf_build.BuildError, loader.LoadError) as exc:
        return Check("bpf:struct_ops", False, f"registering a BPF congestion control failed: {exc}", fix)
    if PROBE_CC in loader.available():
        return Check("bpf:struct_ops", False, f"{PROBE_CC} still listed after unregistering", fix)
    if not listed:
        return Check("bpf:struct_ops", False, f"{PROBE_CC} registered but not listed by the kernel", fix)
    return Check("bpf:struct_ops", True, "built, registered and unregistered a struct_ops congestion control")


def check_cc_host(name: str, bpf_ok: bool = True) -> Check:
    try:
        options = cc_registry.options(name)
    except cc_registry.CcUnavailable as exc:
        return Check(f"cc:{name}", False, str(exc), f"add {name} to config/congestion_controls.yaml")
    if not bpf_ok:
        options.pop("bpf", None)
    for impl, detail in options.items():
        return Check(f"cc:{name}", True, f"{impl}: {detail}")
    return Check(f"cc:{name}", False, cc_registry.why_not(name, None), _cc_fix(name))


def _cc_fix(name: str) -> str:
    e = cc_registry.entry(name)
    if e.get("bpf"):
        return "BPF: see the bpf:struct_ops row; or run in the workflow's VM"
    if e.get("module") and _modules_loadable():
        return f"modprobe {e['module']}"
    return f"boot a kernel with CONFIG_TCP_CONG_{e['kernel_name'].upper()}"


def tool_checks() -> list[Check]:
    return [*(check_tool(t) for t in TOOLS), check_mininet(), check_ns3()]


def host_checks(refresh: bool = False, ccs: Iterable[str] = ()) -> list[Check]:
    """Everything the running kernel and this machine offer a trial."""
    bpf = check_bpf_prereqs(refresh)
    return [check_root(), check_sysctl_writable(), *cached_probe_kernel(refresh), check_tracefs(), check_tracepoint(),
            check_modules(), bpf, *tool_checks(), *(check_cc_host(n, bpf.ok) for n in cc_names(ccs)),
            Check(BOOT_PARAMS, False, "the running kernel booted before the trial, with the registry's module "
                  "parameters", BOOT_PARAMS_FIX)]
