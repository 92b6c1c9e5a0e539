"""The docker image end to end, as the README runs it: built from this checkout by
scripts/docker-image, `docker run ... smoke` regenerates the smoke outputs into the two mounted
folders and matches the committed smoke reference (TCPREPRO_CHECK=1: CI's regression check).

The run has no privilege at all (no --privileged, no added capability, Docker's default seccomp
profile): the measured papers run on the virtual-time lane, whose kernel the image carries.
Skipped, with the engine's own words, only where no Docker engine can run a container at all (no
dockerd, or dockerd inside an unprivileged container, whose cgroup mounts are read-only).
"""
from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from configuration.load import load_workflow
from tests.integration.conftest import CHECKOUT

pytestmark = pytest.mark.root
TAG = "tcprepro:test"


@pytest.fixture(scope="module")
def image() -> str:
    proc = subprocess.run([str(CHECKOUT / "scripts" / "docker-image"), TAG], capture_output=True, text=True,
                          timeout=2400)
    if proc.returncode == 3:
        pytest.skip(f"no Docker engine can run a container on this machine: {proc.stderr.strip()[-500:]}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return TAG


def docker_run(image: str, results: Path, figures: Path, *args: str, timeout: float = 1500,
               env: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """One `docker run` under a name of its own, removed even when the test times out."""
    name = f"tcprepro-test-{uuid.uuid4().hex[:8]}"
    results.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    cmd = ["docker", "run", "--rm", "--name", name, *[x for e in env for x in ("-e", e)],
           "-v", f"{results}:/repro/results", "-v", f"{figures}:/repro/figures", image, *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def test_image_regenerates_smoke_outputs_matching_the_reference(image, tmp_path):
    results, figures = tmp_path / "results", tmp_path / "figures"
    # The check fails a run that lacks the reference's numbers, so an invalid trial fails the test.
    proc = docker_run(image, results, figures, "smoke", env=("TCPREPRO_CHECK=1",))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    prov = [json.loads(p.read_text()) for p in results.glob("smoke/*/*/trial-1/provenance.json")]
    assert prov and {p["kernel"]["where"] for p in prov if "virtual_time" in p} == {"uml"}, "no trial on UML"
    smoke = figures / "collateral" / "smoke"
    for name in ("verdict.md", "table1.md", "table2.md", "provenance.json"):
        assert (smoke / name).exists(), f"{name} missing: {sorted(p.name for p in smoke.glob('*'))}"
    assert (figures / "REPORT-smoke.md").exists()
    html = (figures / "report-smoke.html").read_text(errors="replace")
    assert "fig3_owd_cdf_rtt50" in html and "REPORT-smoke.md" in html     # every figure embedded
    assert any(smoke.glob("*.png"))
    assert list(results.glob("smoke/collateral/*/cell.json"))
    report = (figures / "REPORT-smoke.md").read_text()
    for paper in load_workflow()["papers"]:      # every default paper's smoke cell ran and was judged
        assert (figures / paper / "smoke" / "verdicts.json").exists(), f"{paper}: no smoke verdict"
        assert f"## {paper}:" in report, f"{paper} not in REPORT-smoke.md"
    assert "against the committed reference" in out and " 0 claim verdicts changed" in out


def test_image_names_an_unknown_profile(image, tmp_path):
    proc = docker_run(image, tmp_path / "r", tmp_path / "f", "fast", timeout=120)
    assert proc.returncode == 2
    assert "'fast' is neither a profile" in proc.stderr
    assert not list((tmp_path / "r").iterdir())
