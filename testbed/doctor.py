"""What this machine can run, and where: the `doctor`.

The running kernel is asked, not read about: each qdisc is really added to a veth in a scratch
namespace, because a config file or a module list can say yes while the kernel says no. The pinned
VM kernel cannot be asked without a ~30 s boot, so its features are read statically from its
/boot/config and /lib/modules; the UML lane's kernel (virtual time) likewise from its build's
config, or from kernel/uml/config.fragment before it is built. From these, `plan` places each cell
of a paper on a lane (uml, host, vm), or nowhere (naming what is missing and the fix).
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from cc import registry as cc_registry
from tcprepro import CHECKOUT
from tcprepro.config import is_simulated, load_paper, paper_names
from testbed.cleanup import pid_alive

RUN_DIR = Path(os.environ.get("TCPREPRO_RUN_DIR", "/run/tcprepro"))
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
KERNEL_MODES = ("auto", "host", "vm", "uml")
LANES = ("uml", "host", "vm")
# Under `auto`, the first lane that has everything a paper needs: virtual time first (exact, and no
# load on the host can spoil a trial), then this kernel in real time, then the VM.
AUTO_ORDER = ("uml", "host", "vm")
TCP_PROBE_SINCE = (4, 16)          # the tcp:tcp_probe tracepoint replaced the tcp_probe module in 4.16
SIMULATION_NEEDS = frozenset({"tool:ns3"})     # a simulated paper's cells: the simulator's toolchain only


class KernelOption(NamedTuple):
    symbol: str                    # without the CONFIG_ prefix
    module: str | None = None      # the .ko that provides it when the option is =m


class Qdisc(NamedTuple):
    tc_args: tuple[str, ...]       # what `tc qdisc add dev X` is given to try it
    option: KernelOption


QDISCS: dict[str, Qdisc] = {
    "htb": Qdisc(("root", "handle", "1:", "htb", "default", "1"), KernelOption("NET_SCH_HTB", "sch_htb")),
    "tbf": Qdisc(("root", "handle", "1:", "tbf", "rate", "1mbit", "burst", "32k", "latency", "50ms"),
                 KernelOption("NET_SCH_TBF", "sch_tbf")),
    "bfifo": Qdisc(("root", "handle", "1:", "bfifo", "limit", "60000"), KernelOption("NET_SCH_FIFO")),
    "pfifo": Qdisc(("root", "handle", "1:", "pfifo", "limit", "100"), KernelOption("NET_SCH_FIFO")),
    "netem": Qdisc(("root", "handle", "1:", "netem", "delay", "10ms", "loss", "1%"),
                   KernelOption("NET_SCH_NETEM", "sch_netem")),
    "ingress": Qdisc(("ingress",), KernelOption("NET_SCH_INGRESS", "sch_ingress")),
    "prio": Qdisc(("root", "handle", "1:", "prio"), KernelOption("NET_SCH_PRIO", "sch_prio")),
}
# Kernel features and the options that give them, for reading an installed kernel statically.
KERNEL_OPTIONS: dict[str, tuple[KernelOption, ...]] = {
    "netns+veth": (KernelOption("NET_NS"), KernelOption("VETH", "veth")),
    **{f"qdisc:{kind}": (q.option,) for kind, q in QDISCS.items()},
    "ifb": (KernelOption("IFB", "ifb"),),
    "bridge": (KernelOption("BRIDGE", "bridge"),),
    "tracefs": (KernelOption("TRACING"),),
    "modules": (KernelOption("MODULES"),),
}
LINK_KINDS = ("ifb", "bridge")
# Command -> the Debian package (config/system-packages.txt) that installs it.
TOOLS = {"ip": "iproute2", "tc": "iproute2", "iperf3": "iperf3", "ping": "iputils-ping",
         "ethtool": "ethtool", "tcpdump": "tcpdump", "tcptrace": "tcptrace"}
ROW_ORDER = ("root", "sysctl:", "netns+veth", "qdisc:", "ifb", "bridge", "tracefs", "tracepoint:", "modules",
             "bpf:", "tool:", "cc:", "vm:", "uml:")


@dataclass(frozen=True)
class Check:
    """One feature's verdict on one kernel; `fix` says what to do when `ok` is false."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


class ProbeError(RuntimeError):
    """The scratch namespace could not be made, so no kernel probe could run."""


# ---------------------------------------------------------------- the running kernel, probed

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


def kernel_probe_names() -> list[str]:
    return ["netns+veth", *(f"qdisc:{k}" for k in QDISCS), *LINK_KINDS]


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
            return [veth, *qdiscs, *(_probe_link(ns, kind) for kind in LINK_KINDS)]
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
    from cc import bpf_build, loader
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


def cc_names(extra: Iterable[str] = ()) -> list[str]:
    return list(dict.fromkeys([*cc_registry.registry(), *extra]))


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
            check_modules(), bpf, *tool_checks(), *(check_cc_host(n, bpf.ok) for n in cc_names(ccs))]


# ---------------------------------------------------------------- the pinned VM kernel, read statically

def read_kernel_config(path: Path) -> dict[str, str]:
    """CONFIG_FOO=y lines as {"FOO": "y"}; '# ... is not set' lines are simply absent."""
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            key, _, value = line.partition("=")
            out[key.removeprefix("CONFIG_")] = value.strip('"')
    return out


def installed_modules(modules_dir: Path) -> set[str]:
    """Module names of an installed kernel, from modules.dep (one read instead of a tree walk)."""
    dep = modules_dir / "modules.dep"
    if dep.exists():
        paths = (line.partition(":")[0] for line in dep.read_text().splitlines())
    else:
        paths = (str(p) for p in modules_dir.rglob("*.ko*"))
    return {Path(p).name.split(".ko")[0].replace("-", "_") for p in paths}


def _option_status(opt: KernelOption, config: dict[str, str], modules: set[str]) -> tuple[bool, str]:
    value = config.get(opt.symbol)
    label = opt.module or f"CONFIG_{opt.symbol}"
    if value == "y":
        return True, f"{label} (built in)"
    if value == "m" and opt.module and opt.module in modules:
        return True, f"{label} (module)"
    if value == "m":
        return False, f"CONFIG_{opt.symbol}=m but {opt.module}.ko is not installed"
    return False, f"CONFIG_{opt.symbol} not set"


def _static_check(name: str, options: Iterable[KernelOption], config: dict[str, str],
                  modules: set[str], release: str) -> Check:
    results = [_option_status(o, config, modules) for o in options]
    detail = "; ".join(d for _, d in results)
    ok = all(r for r, _ in results)
    fix = "" if ok else f"the pinned kernel {release} lacks it: pin a kernel that has it"
    return Check(name, ok, detail, fix)


def _release_version(release: str) -> tuple[int, int]:
    major, minor, *_ = [*release.split("-")[0].split("."), "0", "0"]
    return int(major), int(minor)


def _static_tracepoint(config: dict[str, str], release: str) -> Check:
    ok = config.get("EVENT_TRACING") == "y" and _release_version(release) >= TCP_PROBE_SINCE
    detail = f"CONFIG_EVENT_TRACING={config.get('EVENT_TRACING', 'unset')}, {release} >= 4.16"
    return Check("tracepoint:tcp_probe", ok, detail if ok else f"not in {release}: {detail}",
                 "" if ok else "pin a kernel >= 4.16 with CONFIG_EVENT_TRACING")


def _static_bpf(config: dict[str, str]) -> Check:
    missing = [f"CONFIG_{s}" for s in ("BPF_SYSCALL", "BPF_JIT", "DEBUG_INFO_BTF") if config.get(s) != "y"]
    tools = [t for t in ("bpftool", "clang") if not which(t)]
    if not missing and not tools:
        return Check("bpf:struct_ops", True, "BPF_SYSCALL, BPF_JIT, DEBUG_INFO_BTF; host bpftool, clang")
    fix = f"pin a kernel with {', '.join(missing)}" if missing else "make deps (Debian: clang, bpftool)"
    return Check("bpf:struct_ops", False, f"missing: {', '.join(missing + tools)}", fix)


def check_cc_pinned(name: str, release: str) -> Check:
    try:
        options = cc_registry.options(name, release)
    except cc_registry.CcUnavailable as exc:
        return Check(f"cc:{name}", False, str(exc), f"add {name} to config/congestion_controls.yaml")
    for impl, detail in options.items():
        return Check(f"cc:{name}", True, f"{impl}: {detail}")
    e = cc_registry.entry(name)
    fix = "pin a kernel with BTF and BPF JIT" if e.get("bpf") else \
        f"pin a kernel with CONFIG_TCP_CONG_{e['kernel_name'].upper()}"
    return Check(f"cc:{name}", False, cc_registry.why_not(name, release), fix)


def pinned_checks(release: str, host: dict[str, Check] | None = None, ccs: Iterable[str] = (),
                  boot: Path = Path("/boot"), modules_root: Path = Path("/lib/modules")) -> list[Check]:
    """The pinned kernel's features from its config and module tree; the guest shares the host's
    root filesystem, so its tools are the host's."""
    config = read_kernel_config(boot / f"config-{release}")
    modules = installed_modules(modules_root / release)
    host = host or {}
    checks = [Check("root", True, "the guest runs as root (vng --user root)"),
              Check("sysctl:writable", True, "the guest mounts its own /proc")]
    checks += [_static_check(n, opts, config, modules, release) for n, opts in KERNEL_OPTIONS.items()]
    checks += [_static_tracepoint(config, release), _static_bpf(config)]
    checks += [Check(c.name, c.ok, f"host rootfs: {c.detail}", c.fix) for c in host.values()
               if c.name.startswith("tool:")]
    checks += [check_cc_pinned(n, release) for n in cc_names(ccs)]
    return checks


# ---------------------------------------------------------------- the VM runner

def _runner_unavailable(exc: BaseException) -> Check:
    return Check("vm:runner", False, f"VM runner not available: {type(exc).__name__}: {exc}",
                 "testbed/vm.py must import (it provides pinned_kernel and kvm_usable)")


def vm_runner_checks() -> tuple[list[Check], str | None]:
    """QEMU, vng, the pinned kernel (its release, for the static checks) and KVM-or-TCG."""
    try:
        from testbed import vm
    except Exception as exc:
        return [_runner_unavailable(exc)], None
    qemu, vng = which("qemu-system-x86_64"), which("vng")
    checks = [Check("vm:qemu", bool(qemu), qemu or "qemu-system-x86_64 not found",
                    "" if qemu else "make deps (Debian package qemu-system-x86)"),
              Check("vm:vng", bool(vng), vng or "vng not found", "" if vng else "make deps (PyPI virtme-ng)")]
    try:
        kernel = vm.pinned_kernel()
    except Exception as exc:
        fix = "make deps (Debian package linux-image-amd64)"
        return [*checks, Check("vm:kernel", False, str(exc), fix)], None
    checks.append(Check("vm:kernel", True, f"{kernel.release} ({kernel.path})"))
    if qemu:
        checks.append(_check_accel(vm))
    return checks, kernel.release


def _check_accel(vm: Any) -> Check:
    try:
        kvm = vm.kvm_usable()
    except Exception as exc:
        return Check("vm:accel", True, f"TCG (KVM test failed: {exc})")
    if kvm:
        return Check("vm:accel", True, "KVM")
    return Check("vm:accel", True, f"TCG, ~30 s boot (KVM unusable: {_kvm_reason(vm)})")


def _kvm_reason(vm: Any) -> str:
    """The first line of why the VM runner's cached KVM test failed, if it kept one."""
    with contextlib.suppress(AttributeError, OSError, ValueError, KeyError):
        detail = json.loads(Path(vm.KVM_CACHE).read_text())["detail"]
        return detail.splitlines()[0]
    return "see testbed/vm.py kvm_usable"


# ---------------------------------------------------------------- the UML lane's kernel, read statically

def uml_kernel_config() -> tuple[dict[str, str], str]:
    """The UML kernel's options ({"FOO": "y"}) and where they were read: the built kernel's config,
    or, before the build, kernel/uml/config.fragment (what the build checks it got)."""
    from testbed import uml_kernel
    built = uml_kernel.cached()
    if built is not None:
        return read_kernel_config(built.path.with_name("config")), built.release
    options = {k.removeprefix("CONFIG_"): v for k, v in uml_kernel.fragment_options().items() if v != "n"}
    if options.get("FTRACE") == "y" and options.get("ENABLE_DEFAULT_TRACERS") == "y":
        options["TRACING"] = options["EVENT_TRACING"] = "y"     # what ENABLE_DEFAULT_TRACERS selects
    version = uml_kernel.definition()["source"]["version"].split("-")[0]
    return options, f"{version} (UML, not built yet)"


def uml_builtin_ccs(config: dict[str, str]) -> set[str]:
    """Kernel names of the congestion controls built into the UML kernel: reno always, the kernel's
    own where CONFIG_TCP_CONG_<NAME>=y, the registry's kernel-wrapper variants with TCP_CONG_LEDBAT."""
    names = {"reno"} | {k.removeprefix("TCP_CONG_").lower() for k, v in config.items()
                        if k.startswith("TCP_CONG_") and v == "y"}
    if config.get("TCP_CONG_LEDBAT") == "y":
        names |= {e["kernel_name"] for e in cc_registry.registry().values() if e.get("kernel_wrapper")}
    return names


def check_cc_uml(name: str, builtin: set[str], release: str) -> Check:
    try:
        e = cc_registry.entry(name)
    except cc_registry.CcUnavailable as exc:
        return Check(f"cc:{name}", False, str(exc), f"add {name} to config/congestion_controls.yaml")
    if e.get("kernel_name") in builtin:
        return Check(f"cc:{name}", True, f"builtin: {e['kernel_name']} built into {release}")
    fix = ("add it to kernel/uml/config.fragment" if e.get("kernel_name") else
           "give it a kernel_wrapper (config/congestion_controls.yaml): UML has no BPF JIT for struct_ops")
    return Check(f"cc:{name}", False, f"{e.get('kernel_name') or name} not built into {release}", fix)


def uml_checks(host: dict[str, Check] | None = None, ccs: Iterable[str] = ()) -> tuple[list[Check], str]:
    """The UML kernel's features (its guest is root of its own kernel and shares the host's tools)."""
    config, release = uml_kernel_config()
    checks = [Check("root", True, "the guest is root of its own kernel (no root on the host)"),
              Check("sysctl:writable", True, "the guest mounts its own /proc")]
    checks += [_static_check(n, opts, config, set(), release) for n, opts in KERNEL_OPTIONS.items()]
    checks += [_static_tracepoint(config, release),
               Check("bpf:struct_ops", False, "UML has no BPF JIT, so no struct_ops",
                     "built-in congestion controls only (config/congestion_controls.yaml kernel_wrapper)")]
    checks += [Check(c.name, c.ok, f"host rootfs: {c.detail}", c.fix) for c in (host or {}).values()
               if c.name.startswith("tool:")]
    builtin = uml_builtin_ccs(config)
    checks += [check_cc_uml(n, builtin, release) for n in cc_names(ccs)]
    return checks, release


def uml_runner_checks() -> list[Check]:
    """The kernel (built, or buildable here: the workflow builds it first) and the tools a guest's
    init needs from the host."""
    from testbed import uml_kernel
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


# The guest's init mounts a fresh tmpfs on these (testbed/uml_init): what lies below them on the host
# is invisible in the guest.
UML_GUEST_TMPFS = (Path("/tmp"), Path("/run"), Path("/var/tmp"), Path("/root"), Path("/dev/shm"))


def check_uml_checkout(checkout: Path = CHECKOUT) -> Check:
    """The guest runs the checkout's code and venv from the host's / : not from a folder it hides."""
    real = checkout.resolve()
    hidden = next((d for d in UML_GUEST_TMPFS if real == d or d in real.parents), None)
    if hidden is None:
        return Check("uml:checkout", True, f"{real} is visible in the guest")
    return Check("uml:checkout", False, f"{real} is under {hidden}, which the guest mounts empty (tmpfs)",
                 f"clone the repository outside {', '.join(map(str, UML_GUEST_TMPFS))} (e.g. under $HOME or /srv)")


# ---------------------------------------------------------------- needs and plans

@dataclass
class Survey:
    """Each lane's checks by feature name, and whether the VM and UML runners can boot their kernels."""

    host: dict[str, Check]
    vm: dict[str, Check]
    runner: list[Check]
    host_release: str
    vm_release: str | None
    uml: dict[str, Check] = field(default_factory=dict)
    uml_runner: list[Check] = field(default_factory=list)
    uml_release: str | None = None

    def lacks(self, lane: str, need: Iterable[str]) -> list[str]:
        """What `lane` lacks of `need` (its runner's failed checks included)."""
        if lane == "host":
            return _lacks(self.host, need)
        if lane == "vm":
            runner_lacks = [c.name for c in self.runner if not c.ok]
            return sorted({*runner_lacks, *(_lacks(self.vm, need) if self.vm_release else [])})
        if not self.uml_release:
            return ["uml:kernel"]
        return sorted({*(c.name for c in self.uml_runner if not c.ok), *_lacks(self.uml, need)})


def _by_name(checks: Iterable[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def take_survey(refresh: bool = False, ccs: Iterable[str] = ()) -> Survey:
    host = _by_name(host_checks(refresh, ccs))
    runner, release = vm_runner_checks()
    vm = _by_name(pinned_checks(release, host, ccs)) if release else {}
    uml, uml_release = uml_checks(host, ccs)
    return Survey(host, vm, runner, cc_registry.running_release(), release, _by_name(uml), uml_runner_checks(),
                  uml_release)


def check_ns3() -> Check:
    """What a simulated paper needs: the ns-3 headers and libraries and g++ (sim/build.py)."""
    from sim import build
    try:
        compiler, package = build.prerequisites()
    except build.BuildError as exc:
        return Check("tool:ns3", False, str(exc).split(". Fix:")[0], build.FIX)
    return Check("tool:ns3", True, f"{package}; {compiler}")


def needs(scenario: dict[str, Any]) -> set[str]:
    """Feature names a cell's scenario needs (netem only if some delay or loss is non-zero). A
    simulated scenario needs only its simulator's toolchain, and never a kernel feature."""
    if is_simulated(scenario):
        return set(SIMULATION_NEEDS)
    need = {"root", "sysctl:writable", "netns+veth", "qdisc:htb", "tracefs", "tracepoint:tcp_probe", "tool:mininet",
            "tool:ip", "tool:tc", "tool:ping", "tool:ethtool"}
    for direction in scenario["bottleneck"].values():
        if float(direction.get("delay_ms") or 0) > 0 or float(direction.get("loss_pct") or 0) > 0:
            need.add("qdisc:netem")
        need.add("qdisc:bfifo" if "limit_bytes" in direction else "qdisc:pfifo")
    for flow in scenario["flows"]:
        if flow["kind"] == "bulk":
            need |= {f"cc:{flow['cc']}", "tool:iperf3"}
    if scenario.get("keep_pcap"):
        need |= {"tool:tcpdump", "tool:tcptrace"}
    if any(f["kind"] == "bulk" and (f.get("cc_impl") == "bpf" or f.get("cc_params")) for f in scenario["flows"]):
        need.add("bpf:struct_ops")          # per-flow parameters and forced BPF exist only as BPF objects
    return need


def _absent(name: str) -> Check:
    if name.startswith("cc:"):
        return Check(name, False, "not checked", f"add {name[3:]} to config/congestion_controls.yaml")
    return Check(name, False, "not checked")


def _lacks(checks: dict[str, Check], need: Iterable[str]) -> list[str]:
    return sorted(n for n in need if not checks.get(n, _absent(n)).ok)


@dataclass(frozen=True)
class CellPlan:
    cell_id: str
    where: str | None              # "uml", "host", "vm", or None: runnable on none
    host_lacks: tuple[str, ...]
    vm_lacks: tuple[str, ...]
    uml_lacks: tuple[str, ...] = ()


@dataclass
class Plan:
    paper: str
    profile: str
    mode: str                      # TCPREPRO_KERNEL (or the paper's `lane`): auto, host, vm or uml
    cells: list[CellPlan]
    fixes: dict[str, str] = field(default_factory=dict)   # missing feature -> fix

    @property
    def runnable(self) -> bool:
        return all(c.where for c in self.cells)

    def summary(self) -> str:
        """One line: where the paper runs, or why it cannot."""
        return f"{self.paper}: {_summary_body(self)}"


def _union(cells: Iterable[CellPlan], attr: str) -> str:
    return ", ".join(sorted({n for c in cells for n in getattr(c, attr)}))


LANE_PHRASES = {"uml": "on the virtual-time lane (UML)", "host": "on the host", "vm": "in the VM"}


def _summary_body(plan: Plan) -> str:
    stuck = [c for c in plan.cells if not c.where]
    if stuck:
        return _cannot_run(plan, stuck)
    by_lane = {lane: [c for c in plan.cells if c.where == lane] for lane in LANES}
    used = [lane for lane in LANES if by_lane[lane]]
    if used == ["host"]:
        return "runs on the host"
    parts = [LANE_PHRASES[lane] + (f" ({len(by_lane[lane])} cells)" if len(used) > 1 else "") for lane in used]
    host_lacks = _union([c for c in plan.cells if c.where != "host"], "host_lacks")
    return "runs " + " and ".join(parts) + (f" (host lacks: {host_lacks})" if host_lacks else "")


def _cannot_run(plan: Plan, stuck: list[CellPlan]) -> str:
    count = f"{len(stuck)} of {len(plan.cells)} cells"
    host_lacks = _union(stuck, "host_lacks")
    if plan.mode == "host":
        why = f"TCPREPRO_KERNEL=host but the host lacks {host_lacks}"
        if not any(c.vm_lacks for c in stuck):
            return f"cannot run: {why} ({count}). Fix: unset TCPREPRO_KERNEL: the pinned VM kernel has them"
    elif plan.mode == "vm":
        why = f"TCPREPRO_KERNEL=vm but the VM lacks {_union(stuck, 'vm_lacks')}"
    elif plan.mode == "uml":
        why = f"the UML lane lacks {_union(stuck, 'uml_lacks')}"
        fixes = "; ".join(f"{n}: {plan.fixes[n]}" for n in sorted({n for c in stuck for n in c.uml_lacks})
                          if plan.fixes.get(n))
        return f"cannot run: {why} ({len(stuck)} of {len(plan.cells)} cells)" + (f". Fix: {fixes}" if fixes else "")
    else:
        why = f"host lacks {host_lacks}; VM lacks {_union(stuck, 'vm_lacks')}"
    # Forced to the host, the host's gaps matter; otherwise what stops the VM fallback does.
    missing = {n for c in stuck for n in (c.host_lacks if plan.mode == "host" else c.vm_lacks)}
    fixes = "; ".join(f"{n}: {plan.fixes[n]}" for n in sorted(missing) if plan.fixes.get(n))
    return f"cannot run: {why} ({count})" + (f". Fix: {fixes}" if fixes else "")


def kernel_mode() -> str:
    mode = os.environ.get("TCPREPRO_KERNEL", "auto").strip().lower() or "auto"
    if mode not in KERNEL_MODES:
        raise ValueError(f"TCPREPRO_KERNEL={mode!r}: choose one of {', '.join(KERNEL_MODES)}")
    return mode


def paper_needs(paper: str) -> set[str]:
    """What every cell of a paper needs together (all matrix cells, whatever the profile)."""
    return {n for c in load_paper(paper).cells_by_id.values() for n in needs(c.scenario)}


def _place(need: set[str], survey: Survey, mode: str,
           together: set[str] | None = None) -> tuple[str | None, list[str], list[str], list[str]]:
    """(lane, host lacks, VM lacks, UML lacks) for one cell. Under `auto` the first lane of
    AUTO_ORDER that has everything, and `together` (the paper's needs) decides: a paper's cells are
    compared with one another, so all of them run on one kernel (the congestion controls' code and
    the emulator differ between lanes); a forced mode places the cell alone, on that lane. A
    simulated cell (it needs only tool:ns3) runs on the host whatever the mode: no kernel is under test."""
    if need == SIMULATION_NEEDS:
        host_lacks = _lacks(survey.host, need)
        return (None if host_lacks else "host"), host_lacks, host_lacks, host_lacks
    if mode == "auto" and together:
        placed = _place(need | together, survey, mode)
        if placed[0] is not None:
            return placed
    lacks = {lane: survey.lacks(lane, need) for lane in LANES}
    order = AUTO_ORDER if mode == "auto" else (mode,)
    where = next((lane for lane in order if not lacks[lane]), None)
    return where, lacks["host"], lacks["vm"], lacks["uml"]


def paper_mode(cfg: Any) -> str:
    """TCPREPRO_KERNEL if set, else the lane the paper's config names (`lane`), else auto."""
    mode = kernel_mode()
    return cfg.data.get("lane", "auto") if mode == "auto" else mode


def plan(paper: str, profile: str = "quick", survey: Survey | None = None, mode: str | None = None) -> Plan:
    """Where each cell of `paper` runs: the first lane that has everything it needs, else nowhere."""
    cfg = load_paper(paper)
    cells = cfg.cells(profile)
    mode = mode or paper_mode(cfg)
    survey = survey or take_survey(ccs=_paper_ccs(cfg.cells_by_id.values()))
    together = paper_needs(paper)
    placed = []
    for cell in cells:
        where, host_lacks, vm_lacks, uml_lacks = _place(needs(cell.scenario), survey, mode, together)
        placed.append(CellPlan(cell.cell_id, where, tuple(host_lacks), tuple(vm_lacks), tuple(uml_lacks)))
    fixes = {n: _fix(survey.host.get(n, _absent(n)), _vm_check(survey, n))
             for c in placed for n in {*c.host_lacks, *c.vm_lacks}}
    fixes.update({n: _uml_check(survey, n).fix for c in placed for n in c.uml_lacks if _uml_check(survey, n).fix})
    return Plan(cfg.name, profile, mode, placed, fixes)


class CannotRun(RuntimeError):
    """Neither the host kernel nor the VM can run a cell; the message names what is missing."""


def cell_where(cell: Any) -> str:
    """Where one cell runs now: 'uml', 'host' or 'vm' (raises CannotRun naming the missing features)."""
    together = paper_needs(cell.paper)
    survey = take_survey(ccs={n.removeprefix("cc:") for n in together if n.startswith("cc:")})
    mode = paper_mode(load_paper(cell.paper))
    where, host_lacks, vm_lacks, uml_lacks = _place(needs(cell.scenario), survey, mode, together)
    if where is None:
        if mode == "uml":
            fixes = "; ".join(f"{n}: {_uml_check(survey, n).fix}" for n in uml_lacks)
            raise CannotRun(f"cell {cell.cell_id} cannot run on the UML lane: it lacks {', '.join(uml_lacks)}. "
                            f"Fix: {fixes}")
        fixes = "; ".join(f"{n}: {_fix(survey.host.get(n, _absent(n)), _vm_check(survey, n))}"
                          for n in sorted({*host_lacks, *vm_lacks}))
        raise CannotRun(f"cell {cell.cell_id} cannot run (TCPREPRO_KERNEL={mode}): host lacks "
                        f"{', '.join(host_lacks) or 'nothing'}; VM lacks {', '.join(vm_lacks) or 'nothing'}. "
                        f"Fix: {fixes}")
    return where


def _paper_ccs(cells: Iterable[Any]) -> set[str]:
    return {n.removeprefix("cc:") for c in cells for n in needs(c.scenario) if n.startswith("cc:")}


def _uml_check(survey: Survey, name: str) -> Check:
    runner = _by_name(survey.uml_runner)
    return runner.get(name) or survey.uml.get(name, _absent(name))


def _vm_check(survey: Survey, name: str) -> Check | None:
    if name.startswith("uml:"):
        return None
    runner = _by_name(survey.runner)
    if name in runner:
        return runner[name]
    return survey.vm.get(name, _absent(name)) if survey.vm_release else None


def _fix(host: Check | None, vm: Check | None) -> str:
    """The fix column: nothing if the host has it, 'runs in the VM' if the pinned kernel has it."""
    if host is not None and host.ok:
        return ""
    if host is None:
        return "" if vm is None or vm.ok else vm.fix
    if vm is not None and vm.ok:
        return f"runs in the VM: the pinned kernel has {vm.detail}"
    return "; ".join(dict.fromkeys(f for f in (host.fix, vm.fix if vm else "") if f))


# ---------------------------------------------------------------- the report

def _row_rank(name: str) -> int:
    return next((i for i, p in enumerate(ROW_ORDER) if name == p or (p.endswith(":") and name.startswith(p))),
                len(ROW_ORDER))


def rows(survey: Survey) -> list[tuple[str, Check | None, Check | None, Check | None, str]]:
    """(feature, host check, pinned-kernel check, UML-kernel check, fix), in a stable reading order."""
    names = list(dict.fromkeys([*survey.host, *survey.vm, *(c.name for c in survey.runner), *survey.uml,
                                *(c.name for c in survey.uml_runner)]))
    names.sort(key=_row_rank)
    out = []
    for name in names:
        host, vm = survey.host.get(name), _vm_check(survey, name)
        uml = _by_name(survey.uml_runner).get(name) or survey.uml.get(name)
        fix = _fix(host, vm) if not name.startswith("uml:") else (uml.fix if uml and not uml.ok else "")
        out.append((name, host, vm, uml, fix))
    return out


def _cell(check: Check | None) -> str:
    if check is None:
        return "-"
    return f"{'ok' if check.ok else 'NO'}: {check.detail}"


def render_table(survey: Survey) -> str:
    header = ("feature", f"host {survey.host_release}", f"pinned VM kernel {survey.vm_release or '?'}",
              f"UML kernel {survey.uml_release or '?'}", "fix")
    table = [header, *((n, _cell(h), _cell(v), _cell(u), fix) for n, h, v, u, fix in rows(survey))]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [" | ".join([*(r[i].ljust(widths[i]) for i in range(4)), r[4]]).rstrip() for r in table]
    lines.insert(1, "-+-".join("-" * w for w in [*widths, len(header[4])]))
    return "\n".join(lines)


def report_json(survey: Survey, plans: list[Plan]) -> dict[str, Any]:
    return {
        "host_release": survey.host_release,
        "vm_release": survey.vm_release,
        "uml_release": survey.uml_release,
        "features": [{"name": n, "host": asdict(h) if h else None, "vm": asdict(v) if v else None,
                      "uml": asdict(u) if u else None, "fix": fix} for n, h, v, u, fix in rows(survey)],
        "papers": [{**asdict(p), "runnable": p.runnable, "summary": p.summary()} for p in plans],
    }


def main(papers: list[str] | None = None, profile: str = "quick", refresh: bool = False,
         as_json: bool = False) -> int:
    """Print the feature table and each paper's placement; non-zero if a paper can run nowhere."""
    mode = kernel_mode()
    configs = {name: load_paper(name) for name in papers or paper_names()}
    ccs = {cc for cfg in configs.values() for cc in _paper_ccs(cfg.cells(profile))}
    survey = take_survey(refresh, ccs)
    plans = [plan(name, profile, survey, mode) for name in configs]
    if as_json:
        print(json.dumps(report_json(survey, plans), indent=2))
    else:
        print(render_table(survey))
        print()
        for p in plans:
            print(p.summary())
    return 0 if all(p.runnable for p in plans) else 1
