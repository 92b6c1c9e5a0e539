"""A trial on the virtual-time lane gives the same bytes whatever user space the guest runs: one
smoke cell of each measured paper, run with the host's / as the guest's root and again with another
machine image's (a Debian 12 tree debootstrapped with only the guest's tools: other files, other
programs' start-ups, no locale data), compared file by file (docs/uml.md, "On any machine image").

The tree is built once per machine into /var/cache/tcprepro (about 300 MB, 2-3 minutes from the
Debian mirror this machine's apt sources name) and reused; the guest's UML process starts chrooted
in it (TCPREPRO_UML_USERSPACE), which takes a root caller.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from experiments import load_paper

pytestmark = [pytest.mark.uml, pytest.mark.skipif(os.geteuid() != 0, reason="the guest's chroot takes root")]

# The guest's tools (config/system-packages.txt's testbed part) and the init's busybox.
PACKAGES = ("python3", "python3-distutils", "mininet", "iperf", "iperf3", "tcpdump", "iproute2", "iputils-ping",
            "ethtool", "bridge-utils", "procps", "psmisc", "busybox-static")
SUITE = "bookworm"
MARK = "etc/tcprepro-other-image"
CACHE = Path("/var/cache/tcprepro")
# What a trial folder holds that names the host or its wall time rather than the measurement: the
# provenance (wall times, host tool versions), the UML console (the host's memory layout) and
# tcptrace's text (the host path of the capture it read). Everything else must match to the byte.
HOST_SIDE = re.compile(r"^(provenance\.json|uml-console\.log|tcptrace-.*\.txt)$")


def mirror() -> str:
    """The Debian mirror this machine's apt reads (deb822 sources, or the one-line format)."""
    for path in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")):
        if path.exists():
            found = re.search(r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", path.read_text(), re.M)
            if found:
                return found.group(1)
    raise AssertionError("no Debian mirror in /etc/apt: the other image cannot be built")


@pytest.fixture(scope="module")
def other_image() -> Path:
    key = hashlib.sha256(" ".join((SUITE, *PACKAGES)).encode()).hexdigest()[:12]
    tree = CACHE / f"guest-userspace-{key}"
    if (tree / MARK).exists():
        return tree
    assert shutil.which("debootstrap"), "debootstrap missing: make test-deps installs it (config/test-packages.txt)"
    partial = tree.with_name(tree.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
                           str(partial), mirror()], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (partial / MARK).write_text("a user space other than the host's, for tests/integration/test_uml_images.py\n")
    partial.rename(tree)
    return tree


def smoke_cell(paper: str) -> str:
    return str(load_paper(paper).profile("smoke")["cells"][0])


def run_trial(paper: str, out: Path, userspace: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"} | {"TCPREPRO_KERNEL": "uml"}
    if userspace:
        # The job runs only where the guest's / is the other image (its mark is there, not on the host).
        env |= {"TCPREPRO_UML_USERSPACE": str(userspace), "TCPREPRO_UML_PRELUDE": f"[ -e /{MARK} ] || exit 97"}
    return subprocess.run([sys.executable, "-m", "tcprepro", "trial", "--paper", paper, "--cell", smoke_cell(paper),
                           "--trial", "1", "--profile", "smoke", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=1200)


@pytest.mark.parametrize("paper", ["collateral", "westwood", "ledbat"])
def test_a_trial_gives_the_same_bytes_on_another_images_user_space(paper, other_image, tmp_path):
    assert not Path("/", MARK).exists(), "the host carries the other image's mark: the test would show nothing"
    from testbed import uml_kernel
    uml_kernel.ensure()
    outs = {name: tmp_path / name / paper / smoke_cell(paper) / "trial-1" for name in ("host", "other")}
    with ThreadPoolExecutor(2) as pool:             # a core each; virtual time keeps them apart
        futures = {n: pool.submit(run_trial, paper, out, other_image if n == "other" else None)
                   for n, out in outs.items()}
        procs = {n: f.result() for n, f in futures.items()}
    for name, proc in procs.items():
        assert proc.returncode == 0, f"{name}: {proc.stderr[-3000:]}"
    host, other = outs["host"], outs["other"]
    names = sorted(p.name for p in host.iterdir() if p.is_file() and not HOST_SIDE.match(p.name))
    assert sorted(p.name for p in other.iterdir() if p.is_file() and not HOST_SIDE.match(p.name)) == names
    assert any(n.endswith((".csv", ".trace")) for n in names), f"no raw series to compare: {names}"
    for name in names:
        assert (host / name).read_bytes() == (other / name).read_bytes(), f"{paper}: {name} differs"
    prov = {n: json.loads((d / "provenance.json").read_text()) for n, d in outs.items()}
    assert prov["host"]["virtual_time"]["interrupts"] == prov["other"]["virtual_time"]["interrupts"]
    assert json.loads((host / "summary.json").read_text())["valid"], "the trial compared is not valid"
