"""configuration/environment.py: every TCPREPRO_* variable the code reads is listed there with its
kind, the workflow's keys reach its jobs with the precedence they always had, and each JOB variable
is a key of the workflow's schema."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from configuration import environment
from configuration.load import WORKFLOW_SCHEMA_PATH

REPO = Path(__file__).resolve().parents[2]
# Where the code reads or sets them (docker/entrypoint's own are the image's interface, said there).
CODE = [*REPO.glob("*/**/*.py"), REPO / "Snakefile", *REPO.glob("rules/*.smk")]
NOT_VARIABLES = {"TCPREPRO_UML_"}     # a prefix in a docstring, not a name


def test_every_variable_the_code_names_is_listed() -> None:
    named = {m for f in CODE if ".venv" not in f.parts and "tests" not in f.parts
             and f.name != "environment.py" for m in re.findall(r"TCPREPRO_[A-Z0-9_]+", f.read_text())}
    assert named - NOT_VARIABLES <= environment.KNOWN


def test_an_unlisted_variable_is_refused() -> None:
    with pytest.raises(KeyError, match=r"configuration/environment\.py"):
        environment.get("TCPREPRO_SOMETHING_NEW")


def test_each_job_variable_is_a_key_of_the_schema() -> None:
    schema = yaml.safe_load(WORKFLOW_SCHEMA_PATH.read_text())
    assert set(environment.JOB) <= set(schema["properties"])


def test_the_caller_s_variable_overrides_its_key_but_max_attempts() -> None:
    config = {"kernel": "auto", "bulk_generator": "iperf2", "module_params": "", "max_attempts": 2, "vm_lanes": 1}
    caller = {"TCPREPRO_BULK_GENERATOR": "iperf3", "TCPREPRO_MAX_ATTEMPTS": "5", "TCPREPRO_MODULE_PARAMS": "htcp.x=1"}
    assert environment.for_jobs(config, caller) == {
        "TCPREPRO_KERNEL": "auto", "TCPREPRO_BULK_GENERATOR": "iperf3", "TCPREPRO_MODULE_PARAMS": "htcp.x=1",
        "TCPREPRO_MAX_ATTEMPTS": "2", "TCPREPRO_VM_LANES": "1"}
    assert "TCPREPRO_MODULE_PARAMS" not in environment.for_jobs(config, {})     # empty: no override
