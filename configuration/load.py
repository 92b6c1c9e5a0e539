"""Paper configs: load, validate against the schema, expand the matrix into cells and trial specs.

A paper's YAML is the single source of truth for its experiment: every rule reads it through this
module (by experiments.load_paper, which passes the rules of the layers above). Validation happens
before anything runs, and errors name the file and the field. What only a higher layer knows (the
congestion-control registry's algorithms, a simulator's model) comes in as ScenarioRules.
"""
from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from configuration import CHECKOUT, environment, yaml_input

CONFIG_DIR = CHECKOUT / "config"
SCHEMA_PATH = CONFIG_DIR / "schema" / "paper.schema.yaml"
WORKFLOW_SCHEMA_PATH = CONFIG_DIR / "schema" / "workflow.schema.yaml"


def paper_dir() -> Path:
    """Where paper configs are looked up by name; tests point TCPREPRO_PAPER_DIR at small papers."""
    return Path(environment.get("TCPREPRO_PAPER_DIR") or CONFIG_DIR)

PROFILES = ("smoke", "quick", "full")
NOT_PAPERS = {"workflow", "congestion_controls", "crossval"}
_PLACEHOLDER = re.compile(r"\$\{([a-z_][a-z0-9_]*)\}")
_FULL_PLACEHOLDER = re.compile(r"^\$\{([a-z_][a-z0-9_]*)\}$")
# A cell id names its folders and is an argument of the trial's command: words only.
CELL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
# A trial's ports: a block of PORT_BLOCK per port slot (testbed/port_slots.py), bulk flows from offset 1 in
# it, VoIP flows from 60.
PORT_BLOCK = 100
BULK_PORT_OFFSET = 1
VOIP_PORT_OFFSET = 60


def paper_names() -> list[str]:
    """Every paper config in paper_dir() (the other YAML files there are not papers)."""
    return sorted(p.stem for p in paper_dir().glob("*.yaml") if p.stem not in NOT_PAPERS)


class ConfigError(ValueError):
    """A config that cannot be run; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class ScenarioRules:
    """What a cell's scenario is checked against beyond the schema, from the layers that know it:
    the congestion-control registry (a bulk flow's algorithm, implementation and parameters; the
    module parameters a cell changes) and the simulators (a model's own rules and its flows)."""

    check_flow: Callable[[dict[str, Any], str], None]
    """Raise ConfigError when a bulk flow's algorithm, implementation or parameters are unknown."""
    settle_module_params: Callable[[dict[str, Any], str], None]
    """Keep of scenario.module_params only what changes the cell's trial; ConfigError when unknown."""
    check_simulated: Callable[[dict[str, Any], str], None]
    """Raise ConfigError for what a simulated scenario's model refuses."""
    simulated_flows: Callable[[dict[str, Any]], list[dict[str, Any]]]
    """A simulated scenario's flows, as its trial spec lists them."""


@dataclass(frozen=True)
class Cell:
    """One point of a paper's experiment matrix."""

    paper: str
    cell_id: str
    params: dict[str, Any]
    scenario: dict[str, Any]
    point: dict[str, Any] = field(default_factory=dict, compare=False)
    """Every matrix parameter, unset ones (None) included: what the cell is made from."""


@dataclass
class PaperConfig:
    path: Path
    data: dict[str, Any]
    sha256: str
    rules: ScenarioRules
    cells_by_id: dict[str, Cell] = field(default_factory=dict)
    matrix_cells: list[str] = field(default_factory=list)
    """The cells of the main matrix (the paper's own), in order; extra_matrices' follow in cells_by_id."""
    alternatives: list[Any] = field(default_factory=list)
    """Every alternative of the open choices (configuration/choices.py): run only on request."""
    twins_by_id: dict[str, Cell] = field(default_factory=dict)
    """The cells the alternatives add, by id; not in cells_by_id, so no profile runs them."""

    def any_cell(self, cell_id: str) -> Cell | None:
        """A matrix cell or an alternative's twin."""
        return self.cells_by_id.get(cell_id) or self.twins_by_id.get(cell_id)

    @property
    def name(self) -> str:
        return self.data["paper"]

    @property
    def simulated(self) -> bool:
        """A simulated paper runs a model (ns-3) on the host: no kernel, no VM, no root."""
        return is_simulated(self.data["scenario"])

    @property
    def figure_trials(self) -> list[str]:
        """Cells whose trial 1 a figure of this paper reads raw."""
        return list(self.data.get("figure_trials", []))

    def cell_at(self, params: dict[str, Any], name: str | None = None,
                scenario_over: dict[str, Any] | None = None) -> Cell:
        """The cell of one matrix point: its id from the cell_id template (or `name`), its scenario
        with the point's values substituted (and `scenario_over` merged in), checked."""
        path, data = self.path, self.data
        cell_id = name or _substitute(data["cell_id"], params, f"{path}: cell_id")
        if not CELL_ID.fullmatch(str(cell_id)):
            raise ConfigError(f"{path}: field 'cell_id': {cell_id!r} (from {params}) is not a cell id: use "
                              "letters, digits and . _ - + only, starting with a letter or digit")
        scenario = _drop_unset(_substitute(copy.deepcopy(data["scenario"]), params, f"{path}: scenario"))
        if scenario_over:
            scenario = merge(scenario, scenario_over)
        bad = next(iter(_scenario_validator().iter_errors(scenario)), None)
        if bad is not None:
            raise ConfigError(f"{path}: cell {cell_id}: field 'scenario.{_field_path(bad)}': "
                              f"{_message(bad, hint=False)}")
        _check_scenario(scenario, f"{path}: cell {cell_id}: scenario", self.rules)
        return Cell(data["paper"], str(cell_id), {k: v for k, v in params.items() if v is not None}, scenario,
                    dict(params))

    def profile(self, profile: str) -> dict[str, Any]:
        if profile not in PROFILES:
            raise ConfigError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
        return self.data["profiles"][profile]

    def cells(self, profile: str) -> list[Cell]:
        """The cells a profile runs, in matrix order."""
        wanted = self.profile(profile).get("cells")
        if wanted is None:
            return list(self.cells_by_id.values())
        return [self.cells_by_id[c] for c in wanted]

    def duration_s(self, cell_id: str, profile: str) -> float:
        """A cell's trial length: its scenario's own duration_s if it has one, else the profile's."""
        cell = self.any_cell(cell_id)
        if cell is None:
            raise KeyError(cell_id)
        scenario = cell.scenario
        return float(scenario["duration_s"] if "duration_s" in scenario else self.profile(profile)["duration_s"])

    def trial_spec(self, cell_id: str, trial: int, profile: str) -> dict[str, Any]:
        """The fully expanded description of one trial: what the runner executes, saved as spec.json.
        A copy: a caller may change it without changing the cell (or the next trial's spec)."""
        cell = self.any_cell(cell_id)
        if cell is None:
            raise ConfigError(f"{self.path}: no cell {cell_id!r}; cells are: {', '.join(self.cells_by_id)}")
        prof = self.profile(profile)
        spec = {
            "paper": self.name,
            "cell": cell_id,
            "trial": trial,
            "profile": profile,
            "duration_s": cell.scenario["duration_s"] if "duration_s" in cell.scenario else prof["duration_s"],
            "params": copy.deepcopy(cell.params),
            "scenario": copy.deepcopy(cell.scenario),
            "config_sha256": self.sha256,
        }
        if self.simulated:
            return {**spec, "warmup_s": prof["warmup_s"], "flows": self.rules.simulated_flows(cell.scenario)}
        out = {**spec, "flows": expand_flows(cell.scenario["flows"]),
               "bulk_generator": str(cell.scenario.get("bulk_generator")
                                     or load_workflow().get("bulk_generator", "iperf2"))}
        if cell.scenario.get("module_params"):
            out["module_params"] = spec["scenario"]["module_params"]   # what the runner sets (testbed/trial.py)
        return out


def is_simulated(scenario: dict[str, Any]) -> bool:
    """A scenario that names a simulator runs its `model` (sim/build.py); the others are measured."""
    return "simulator" in scenario


def expand_flows(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every flow an id and a port offset; a bulk entry with count N becomes N flows."""
    out: list[dict[str, Any]] = []
    n_bulk = n_voip = 0
    for entry in flows:
        if entry["kind"] == "bulk":
            for i in range(int(entry.get("count", 1))):
                out.append({
                    "id": f"bulk{n_bulk}", "kind": "bulk", "pair": entry["pair"], "cc": entry["cc"],
                    "cc_params": entry.get("cc_params") or None, "cc_impl": entry.get("cc_impl"),
                    "cc_key": cc_key(entry),
                    "start_s": float(entry.get("start_s", 0)) + i * float(entry.get("stagger_s", 0)),
                    "bytes": entry.get("bytes"), "port_offset": BULK_PORT_OFFSET + n_bulk,
                })
                n_bulk += 1
        else:
            out.append({
                "id": f"voip{n_voip}", "kind": "voip", "pair": entry["pair"],
                "packet_bytes": entry.get("packet_bytes", 186), "interval_ms": entry.get("interval_ms", 20),
                "start_s": float(entry.get("start_s", 0)), "port_offset": VOIP_PORT_OFFSET + n_voip,
            })
            n_voip += 1
    return out


def _check_ports(flows: list[dict[str, Any]], where: str) -> None:
    """Each flow has its own port in the trial's block: bulk flows from BULK_PORT_OFFSET up to the
    VoIP flows' offset, VoIP flows from there to the block's end (PORT_BLOCK)."""
    bulk = sum(int(f.get("count", 1)) for f in flows if f["kind"] == "bulk")
    voip = sum(1 for f in flows if f["kind"] == "voip")
    if bulk > VOIP_PORT_OFFSET - BULK_PORT_OFFSET:
        raise ConfigError(f"{where}.flows: {bulk} bulk flows, but a trial's port block has room for "
                          f"{VOIP_PORT_OFFSET - BULK_PORT_OFFSET}; lower the counts or split the cell")
    if voip > PORT_BLOCK - VOIP_PORT_OFFSET:
        raise ConfigError(f"{where}.flows: {voip} VoIP flows, but a trial's port block has room for "
                          f"{PORT_BLOCK - VOIP_PORT_OFFSET}; lower the count or split the cell")


def cc_key(flow: dict[str, Any]) -> str:
    """One key per distinct (algorithm, implementation, parameters): flows sharing it share a load."""
    key = flow["cc"]
    if flow.get("cc_impl"):
        key += f"@{flow['cc_impl']}"
    if flow.get("cc_params"):
        key += "[" + ",".join(f"{k}={v}" for k, v in sorted(flow["cc_params"].items())) + "]"
    return key


def _substitute(value: Any, params: dict[str, Any], where: str) -> Any:
    """Replace ${name} placeholders; a value that is only a placeholder takes the parameter's type.
    A string that names an unset parameter (null) is unset itself."""
    if isinstance(value, dict):
        return {k: _substitute(v, params, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, params, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):
        names = _PLACEHOLDER.findall(value)
        for name in names:
            if name not in params:
                raise ConfigError(f"{where}: ${{{name}}} is not a matrix parameter ({', '.join(params)})")
        if any(params[n] is None for n in names):
            return None
        whole = _FULL_PLACEHOLDER.match(value)
        if whole:
            return params[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(params[m.group(1)]), value)
    return value


def _drop_unset(value: Any) -> Any:
    """A mapping's null fields removed, at every depth: an unset field is as if never written (the
    profile's duration, the kernel's own sysctl), so a cell that leaves it unset has the same spec
    as before the field could be set."""
    if isinstance(value, dict):
        return {k: _drop_unset(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_unset(v) for v in value]
    return value


def _matrix_points(matrix: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of the axes; an axis whose values are mappings contributes all their keys."""
    axes = []
    for name, values in matrix.items():
        axes.append([v if isinstance(v, dict) else {name: v} for v in values])
    points = []
    for combo in itertools.product(*axes):
        point: dict[str, Any] = {}
        for part in combo:
            point.update(part)
        points.append(point)
    return points


def _schema() -> dict[str, Any]:
    return yaml.safe_load(SCHEMA_PATH.read_text())


@functools.cache
def _scenario_validator() -> Any:
    """One cell's scenario against the schema's definition (built once: a paper has many cells)."""
    schema = _schema()
    return _Validator({**schema["$defs"]["scenario"], "$defs": schema["$defs"]})


def _whole(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# JSON Schema counts 3.0 as an integer; YAML's `3.0` stays a float, which a trial count, a range or a
# trial's environment (TCPREPRO_MAX_ATTEMPTS=3.0) does not take: an integer field takes integers only.
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole))


def _field_path(err: jsonschema.ValidationError) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")


def _message(err: jsonschema.ValidationError, hint: bool = True) -> str:
    """The schema's message; for `anyOf` (a value or a ${placeholder}), what the value itself broke."""
    def from_placeholder(e: jsonschema.ValidationError) -> bool:
        return isinstance(e.schema, dict) and str(e.schema.get("pattern", "")).startswith("^\\$\\{")

    own = [e.message for e in err.context or [] if not from_placeholder(e)]
    if not own:
        return err.message
    placeholder = any(from_placeholder(e) for e in err.context or [])
    return "; ".join(dict.fromkeys(own)) + (" (or a ${parameter} of the matrix)" if placeholder and hint else "")


def _check_profiles(data: dict[str, Any], path: Path) -> None:
    """A simulated paper's profiles say where its metric window starts; a measured paper's do not."""
    simulated = is_simulated(data["scenario"])
    for prof in PROFILES:
        p = data["profiles"][prof]
        where = f"{path}: field 'profiles.{prof}.warmup_s'"
        if simulated and "warmup_s" not in p:
            raise ConfigError(f"{where}: missing; a simulated paper's metrics cover [warmup_s, duration_s)")
        if simulated and "duration_s" not in p:
            raise ConfigError(f"{path}: field 'profiles.{prof}.duration_s': missing; a simulated paper's "
                              "metrics cover [warmup_s, duration_s)")
        if simulated and not p["warmup_s"] < p["duration_s"]:
            raise ConfigError(f"{where}: {p['warmup_s']} is not below duration_s {p['duration_s']}")
        if not simulated and "warmup_s" in p:
            raise ConfigError(f"{where}: only simulated papers have one (a measured trial's window is its "
                              "traffic); remove it")


def _check_scenario(scenario: dict[str, Any], where: str, rules: ScenarioRules) -> None:
    """Rules the schema cannot say: flows name existing host pairs and known congestion controls."""
    if is_simulated(scenario):
        rules.check_simulated(scenario, where)
        return
    pairs = scenario["pairs"]
    _check_ports(scenario["flows"], where)
    for i, flow in enumerate(scenario["flows"]):
        if flow["kind"] == "bulk":
            rules.check_flow(flow, f"{where}.flows[{i}]")
        if not 0 <= flow["pair"] < pairs:
            raise ConfigError(f"{where}.flows[{i}].pair: {flow['pair']} but the topology has {pairs} pairs "
                              f"(0..{pairs - 1}); raise scenario.pairs or fix the flow")
    rules.settle_module_params(scenario, where)


def load_paper(name_or_path: str | Path, rules: ScenarioRules) -> PaperConfig:
    """Load and validate config/<paper>.yaml (or a path) against the schema and `rules`; raise
    ConfigError naming the bad field."""
    path = Path(name_or_path)
    if not path.suffix:
        path = paper_dir() / f"{name_or_path}.yaml"
    if not path.exists():
        raise ConfigError(f"no paper config {path}; known papers: {', '.join(paper_names())}")
    raw = read(path)
    data = parse_yaml(raw, path)
    schema = _schema()
    validator = _Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        raise ConfigError(f"{path}: field '{_field_path(err) or '<top>'}': {_message(err)}")
    _check_profiles(data, path)
    cfg = PaperConfig(path=path, data=data, sha256=hashlib.sha256(raw).hexdigest(), rules=rules)
    defaults = data.get("matrix_defaults") or {}
    main = _matrix_points(data["matrix"])
    points = main + [pt for m in data.get("extra_matrices", []) for pt in _matrix_points(m)]
    for k, point in enumerate(points):
        cell = cfg.cell_at({**point, **{k: v for k, v in defaults.items() if k not in point}})
        if cell.cell_id in cfg.cells_by_id:
            raise ConfigError(f"{path}: cell_id template gives {cell.cell_id!r} twice; add a parameter to it")
        cfg.cells_by_id[cell.cell_id] = cell
        if k < len(main):
            cfg.matrix_cells.append(cell.cell_id)
    from configuration import choices  # it builds on PaperConfig
    cfg.alternatives, cfg.twins_by_id = choices.alternatives(cfg)
    for cid in data.get("figure_trials", []):
        if cid not in cfg.cells_by_id:
            raise ConfigError(f"{path}: field 'figure_trials': no cell {cid!r}; "
                              f"cells are: {', '.join(cfg.cells_by_id)}")
    for prof in PROFILES:
        for cid in data["profiles"][prof].get("cells", []):
            if cid not in cfg.cells_by_id:
                raise ConfigError(f"{path}: field 'profiles.{prof}.cells': no cell {cid!r}; "
                                  f"cells are: {', '.join(cfg.cells_by_id)}")
        if "duration_s" not in data["profiles"][prof]:
            unbounded = [c.cell_id for c in cfg.cells(prof) if "duration_s" not in c.scenario]
            if unbounded:
                raise ConfigError(f"{path}: field 'profiles.{prof}.duration_s': missing, and cell "
                                  f"{unbounded[0]} sets no scenario.duration_s of its own")
    return cfg


def load_workflow(path: Path | None = None) -> dict[str, Any]:
    """config/workflow.yaml as checked by check_workflow (the defaults a run starts from)."""
    path = path or CONFIG_DIR / "workflow.yaml"
    data = parse_yaml(read(path), path)
    check_workflow(data, where=str(path), papers_exist=False)   # a trial reads its defaults, not the paper list
    return data


def parse_yaml(raw: bytes, path: Path) -> Any:
    """YAML as configuration.yaml_input reads it (unique keys, bounded aliases, finite numbers), or a
    ConfigError naming the file, line and column of the first error."""
    try:
        return yaml_input.parse(raw, path)
    except yaml_input.InputError as exc:
        raise ConfigError(str(exc)) from None


def read(path: Path) -> bytes:
    """A config file's bytes: a regular file of bounded size, or a ConfigError saying why not."""
    try:
        return yaml_input.read_bytes(path)
    except yaml_input.InputError as exc:
        raise ConfigError(str(exc)) from None


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `base` as Snakemake lays a --configfile on the config (its update_config): a
    mapping merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        out[key] = merge(old, value) if isinstance(value, dict) and isinstance(old, dict) else value
    return out


def closest(word: str, known: list[str] | tuple[str, ...]) -> str:
    """' (did you mean X?)' when a known word is close to the unknown one, else ''."""
    near = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def check_workflow(config: Any, where: str | None = None, papers_exist: bool = True) -> None:
    """The merged workflow config (config/workflow.yaml, the profile's `config:`, `--config`) against
    config/schema/workflow.schema.yaml; raise ConfigError naming the field, where it may come from,
    and the fix. The Snakefile calls it first thing, so a bad value stops the run before any trial."""
    schema = yaml.safe_load(WORKFLOW_SCHEMA_PATH.read_text())
    fields = list(schema["properties"])
    source = where or "the workflow config (config/workflow.yaml, the profile's config: or --config)"
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: not a mapping of keys to values")
    try:
        yaml_input.check_finite(config, source)
    except yaml_input.InputError as exc:
        raise ConfigError(str(exc)) from None
    for key in config:
        if key not in schema["properties"]:
            raise ConfigError(f"{source}: unknown key {key!r}{closest(str(key), fields)}; "
                              f"known keys: {', '.join(fields)}")
    errors = sorted(_Validator(schema).iter_errors(config), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        name = _field_path(err) or "<top>"
        top = str(err.absolute_path[0]) if err.absolute_path else ""
        about = schema["properties"].get(top, {}).get("description", "")
        raise ConfigError(f"{source}: field '{name}': {err.message}" + (f" ({top}: {about})" if about else ""))
    unknown = [p for p in config["papers"] if not (paper_dir() / f"{p}.yaml").exists() or p in NOT_PAPERS]
    if unknown and papers_exist:
        names = paper_names()
        raise ConfigError(f"{source}: field 'papers': no paper {unknown[0]!r}{closest(unknown[0], names)}; "
                          f"papers are: {', '.join(names)}")


def check_config_args(entries: list[str] | None, config: dict[str, Any]) -> None:
    """Refuse a `--config KEY=VALUE` (or a profile's `config:` entry) whose text Snakemake changed:
    it strips quotes from both ends and reads the rest as YAML, where ' #' starts a comment and
    `&a x` drops its first word, so results='/tmp/run #2' would write to /tmp/run. Only quotes around
    the whole value may go."""
    last = dict(entry.partition("=")[::2] for entry in entries or [])
    for key, text in last.items():
        value = config.get(key)
        if isinstance(value, str) and text not in (value, *(q + value + q for q in "'\"")):
            raise ConfigError(f"--config {key}={text!r}: Snakemake strips a --config value's quotes and reads it "
                              f"as YAML, which makes it {value!r}. Fix: set {key} in a --configfile")
