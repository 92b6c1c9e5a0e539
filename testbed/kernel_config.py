"""The features of a kernel that is not running here, read from its build.

The pinned VM kernel cannot be asked without a ~30 s boot, so its features are read statically
from its /boot/config and /lib/modules; the UML lane's kernel (virtual time) likewise from its
build's config, or from kernel/uml/config.fragment before it is built. The guests share the host's
root filesystem, so their tools are the host's (testbed/host_probes.py).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cc import registry as cc_registry
from testbed import uml_kernel
from testbed.host_probes import which
from testbed.kernel_features import BOOT_PARAMS, BOOT_PARAMS_FIX, KERNEL_OPTIONS, Check, KernelOption, cc_names

TCP_PROBE_SINCE = (4, 16)          # the tcp:tcp_probe tracepoint replaced the tcp_probe module in 4.16


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
    checks.append(Check(BOOT_PARAMS, False, "one guest boots for many trials, with the registry's module parameters",
                        BOOT_PARAMS_FIX))
    return checks


def uml_kernel_config() -> tuple[dict[str, str], str]:
    """The UML kernel's options ({"FOO": "y"}) and where they were read: the built kernel's config,
    or, before the build, kernel/uml/config.fragment (what the build checks it got)."""
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
    checks.append(Check(BOOT_PARAMS, True, "every trial boots its own guest with the cell's module parameters"))
    return checks, release
