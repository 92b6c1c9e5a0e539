"""The JSON Schemas of summary.json and provenance.json accept good documents and reject bad ones."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from analysis import load_schema, validate


def good_provenance() -> dict[str, Any]:
    return {
        "schema": "tcprepro.provenance/1",
        "kernel": {"release": "6.1.0-56-amd64", "where": "vm", "accel": "tcg"},
        "paper": "collateral", "cell": "htcp-rtt50-f1", "trial": 1,
        "config_sha256": "ab" * 32, "port_base": 20100, "t0_monotonic": 1234.5,
        "congestion_controls": {
            "cubic": {"impl": "builtin", "kernel_name": "cubic", "params": {}, "object_sha256": None},
            "htcp": {"impl": "module", "kernel_name": "htcp", "params": {"use_bandwidth_switch": 0}},
            "ledbat": {"impl": "bpf", "kernel_name": "bpf_ledbat", "params": {"target_ms": 25},
                       "object_sha256": "cd" * 32},
        },
        "sysctls": {"net.ipv4.tcp_no_metrics_save": 1, "net.core.default_qdisc": "pfifo_fast"},
        "qdiscs": {"r/r-eth1": [{"kind": "htb", "handle": "1:"}]},
        "offloads": {"r/r-eth1": {"tso": False, "gso": "off"}},
        "tools": {"iperf3": "3.12", "tcpdump": "4.99.3", "tcptrace": "6.6.7"},
        "fidelity": [{"name": "base_rtt", "configured": 50, "measured": 50.8, "tolerance": 2,
                      "unit": "ms", "pass": True}],
        "timing": {"setup_s": 1.5, "boot_s": None},
    }


def good_summary() -> dict[str, Any]:
    return {
        "schema": "tcprepro.summary/1", "paper": "collateral", "cell": "cubic-rtt50-f1", "trial": 1,
        "valid": True, "invalid_reasons": [],
        "metrics": {"goodput_kbyte_s": 118.7, "owd_median_ms": 401.2, "bulk0.retransmits": 41},
        "flows": [{"id": "bulk0", "kind": "bulk", "cc": "cubic", "goodput_kbit_s": 949.1, "retransmits": 41}],
        "timing": {"setup_s": 1.2, "teardown_s": 0.4, "traffic_s": 30.0},
    }


def test_schemas_are_draft_2020_12() -> None:
    for name in ("summary", "provenance"):
        schema = load_schema(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_good_documents_validate() -> None:
    validate(good_provenance(), "provenance")
    validate(good_summary(), "summary")
    host = good_provenance()
    host["kernel"] = {"release": "6.18.44", "where": "host", "accel": None}
    validate(host, "provenance")


@pytest.mark.parametrize("path, value", [
    (("kernel", "where"), "container"),
    (("kernel", "accel"), None),  # a VM must say kvm or tcg
    (("congestion_controls", "ledbat", "object_sha256"), None),  # BPF needs its object hash
    (("congestion_controls", "cubic", "impl"), "patched"),
    (("config_sha256",), "abc"),
    (("port_base",), "20000"),
    (("fidelity",), [{"name": "x", "configured": 1, "measured": 1, "tolerance": 0, "unit": "ms"}]),
])
def test_bad_provenance_rejected(path: tuple[str, ...], value: Any) -> None:
    doc = good_provenance()
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validate(doc, "provenance")


def test_host_with_accelerator_rejected() -> None:
    doc = good_provenance()
    doc["kernel"] = {"release": "6.18", "where": "host", "accel": "kvm"}
    with pytest.raises(jsonschema.ValidationError):
        validate(doc, "provenance")


@pytest.mark.parametrize("mutate", [
    lambda d: d["metrics"].update({"owd_median_ms": None}),  # metrics are numbers only
    lambda d: d["metrics"].update({"owd_median_ms": "401"}),
    lambda d: d.update({"invalid_reasons": ["fidelity x"]}),  # valid but with reasons
    lambda d: d.update({"valid": False}),  # invalid without a reason
    lambda d: d.pop("flows"),
    lambda d: d["flows"][0].pop("kind"),
    lambda d: d.update({"schema": "tcprepro.summary/2"}),
])
def test_bad_summary_rejected(mutate: Any) -> None:
    doc = copy.deepcopy(good_summary())
    mutate(doc)
    with pytest.raises(jsonschema.ValidationError):
        validate(doc, "summary")
