"""The wizard's shared state: the plan being edited, the cluster and everything learnt from it.

One :class:`WizardState` is owned by the App; step screens read it and write their answers into
``answers`` (the answers-file shape, a plain dict), which is validated through
:class:`wizard.engine.plan.Plan` so a field rule lives in one place for the TUI, the CLI and the file.
Answers are saved atomically after each step, with the step name in a small state file beside
them so an interrupted run can resume where it stopped.

Heavy engine modules (pydantic models, ruamel) are imported inside functions: the first frame
must not wait for them.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.engine import steps
from wizard.paths import config_dir

if TYPE_CHECKING:
    from types import ModuleType

    from ruamel.yaml.comments import CommentedMap

    from screens.flow import Owned
    from wizard.cluster.facade import ApplyPlan, ApplyResult, Cluster, ImageStatus, Preflight
    from wizard.engine.answers import FieldError
    from wizard.engine.facts import ClusterFacts, NodeFacts
    from wizard.engine.hostdoctor import HostState
    from wizard.engine.hostfolders import HostPath
    from wizard.engine.plan import Plan
    from wizard.engine.render import Rendered
    from wizard.engine.results import Check, ClusterInfo, LogLine

#: First line of answers saved mid-way: their missing fields are expected, not problems to report on resume.
INCOMPLETE_HEADER = "# gpu-wizard answers (incomplete: the wizard resumes where it stopped)\n"


def import_facade() -> ModuleType:
    """:mod:`wizard.cluster.facade`, the TUI's one door to the cluster (it loads the Kubernetes client:
    call it in a thread, ``await asyncio.to_thread(import_facade)``, so the event loop never waits)."""
    from wizard.cluster import facade

    return facade


def default_answers_path() -> Path:
    """Where answers are saved when no ``--answers`` file is given."""
    return config_dir() / "answers.yaml"


def resume_path(answers_path: Path) -> Path:
    """The small state file next to an answers file: which step the run stopped at."""
    return answers_path.with_name(f".{answers_path.name}.step.json")


def previous_path(answers_path: Path) -> Path:
    """Where the answers a run does not start from are kept before it replaces them (``answers.previous.yaml``)."""
    return answers_path.with_name(f"{answers_path.stem}.previous{answers_path.suffix}")


def display_path(path: str | os.PathLike[str]) -> str:
    """A path as shown to the user: the home directory written as ``~``."""
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text


def tildify(text: str) -> str:
    """Every mention of the home directory in a message written as ``~`` (engine messages name paths)."""
    home = str(Path.home())
    return text.replace(home + os.sep, "~" + os.sep) if home not in ("", "/") else text


def get_path(data: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """``data["driver"]["version"]`` for ``"driver.version"``, or ``default`` when absent."""
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``dotted`` in ``data``; ``None`` or ``""`` removes an optional key."""
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    if value is None or value == "":
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value


@dataclass
class WizardState:
    """Everything the steps share; owned by the App, read and written by the step screens.

    The session's fields come first (answers, where they are saved, the cluster); every field after them is
    owned by one step, declared in :data:`screens.flow.STEPS` (``Step.owns``) with what makes it stale: a changed
    answer (:meth:`set`), another cluster (:meth:`adopt_cluster`), a new run (:meth:`start_over`) reset it to
    its default here, from that declaration (no reset is written out by hand).
    """

    answers: dict[str, Any] = field(default_factory=lambda: {"version": 1})
    """The plan being edited, in answers-file shape (validated through ``wizard.engine.plan.Plan``)."""
    answers_path: Path = field(default_factory=default_answers_path)
    """Where answers are saved after each step (the ``--answers`` file when given)."""
    answers_doc: CommentedMap | None = None
    """The round-trip YAML document as loaded, so saving keeps the user's comments."""
    answers_given: bool = False
    """Answers came from ``--answers``: prefill and replay through the steps already valid."""
    replay: bool = False
    """Advance automatically through steps whose answers are valid (subiquity-style replay)."""
    replay_until: str = steps.PREVIEW.name
    """The replay stops here (never auto-applies)."""
    demo: str | None = None
    """Demo scenario name when running on the built-in simulated cluster."""
    kubeconfig: str | None = None
    """The kubeconfig file given (``--kubeconfig``; None: kubectl's own)."""
    context: str | None = None
    """The kube context connected to (or given by ``--context``)."""
    chart: str | None = None
    """``--chart``: the chart Apply installs where no operator runs (a local folder, .tgz or oci://; air-gapped);
    None: the release's chart from NVIDIA's Helm repository."""
    cluster: Cluster | None = None
    """The connected cluster (owned by the App, closed on exit)."""
    info: ClusterInfo | None = None
    """What the connected cluster is (context, server, demo or not)."""
    step: str = steps.CONNECT.name
    """The step on screen."""
    load_errors: list[str] = field(default_factory=list)
    """Problems found in the answers file, shown once the first step is up."""

    # -- owned by the steps (screens.flow.STEPS, Step.owns) ---------------------------------------
    preflight: Preflight | None = None
    """The preflight of the connected cluster (Connect)."""
    live_findings: list[Check] = field(default_factory=list)
    """What the operator is doing now (an upgrade under way, failing driver pods): ``Cluster.live_findings``."""
    nodes: dict[str, NodeFacts] = field(default_factory=dict)
    """Facts per node, kept current by the Nodes step's watch."""
    host_drivers: dict[str, str] = field(default_factory=dict)
    """GPU node -> driver version its host's nvidia-smi reported ("" none), once the user ran the host check."""
    host_states: dict[str, HostState] = field(default_factory=dict)
    """GPU node -> its host's state from the Nodes step's host check (judged against the
    current plan by :func:`screens.findings.host_groups`, so a mode change re-judges without a new probe)."""
    host_checked: str = ""
    """What the last finished host check covered (``all 3 GPU nodes``, ``8 of 5000 GPU nodes (…)``); "" none yet."""
    host_rest: int = 0
    """GPU nodes the last host check left out (a sample above ``wizard.engine.hostsample.AUTO_HOSTS``)."""
    host_folders: tuple[HostPath, ...] = ()
    """The host folders the last host check probed with the hosts (each state's ``path_checks``): those of the answers
    so far with the wizard's defaults for the rest (:func:`screens.findings.answer_folders`)."""
    rendered: Rendered | None = None
    """The current plan rendered with the current facts."""
    images: list[ImageStatus] = field(default_factory=list)
    """``ImageStatus`` per (kernel, OS) group from the last image check."""
    precompiled_tags: list[str] | None = None
    """The tags the pull registry's driver repository holds, once read (None: not read): Mode's recommendation
    takes them (``ClusterFacts.recommend_mode``, as ``answers init`` does)."""
    precompiled_from: str = ""
    """The repository ``precompiled_tags`` were listed from (``nvcr.io/nvidia/driver``)."""
    registry_versions: list[str] | None = None
    """Upstream versions the pull registry holds for every node OS, once the Driver step read them (None: not read):
    a version suggested anywhere comes from these."""
    references: list[Check] = field(default_factory=list)
    """Whether the repoConfig ConfigMap and pull Secrets the plan names exist (checked in Preview)."""
    prepared: ApplyPlan | None = None
    """The server dry-run of the rendered plan (Preview)."""
    applied: ApplyResult | None = None
    """What the apply did, once Apply ran."""
    helm_command: str = ""
    """The ``helm upgrade`` whose values the Apply step saved (the change goes through it: Verify names it
    while the live policy does not hold the plan yet)."""
    applied_for: ApplyPlan | None = None
    """The ``prepared`` dry-run that ``applied`` sent: the apply belongs to the plan on screen only while
    ``prepared`` is this very object (a changed answer or a new Preview makes another)."""
    path_checks: list[Check] | None = None
    """Node-side checks of the host paths (Paths step), None until they ran for the current paths."""
    path_checks_from: str = ""
    """The step whose probe gave ``path_checks``: the Nodes step's when Paths took its host check's answer for these
    very folders (its findings stay the Nodes step's, said and overridden once), else "" (Paths' own)."""
    overrides: dict[str, frozenset[str]] = field(default_factory=dict)
    """Step name -> the blocking findings (their messages) the user chose to go on despite, by the override on
    that step: it covers those findings only, never another step's nor one found later (reset whenever an
    answer changes; :func:`screens.findings.overridden`)."""
    checks: list[Check] = field(default_factory=list)
    """Verification findings, in arrival order."""
    log_lines: list[LogLine] = field(default_factory=list)
    """Raw verification output (``LogLine``), kept for the exported report."""
    diagnosis: list[Check] = field(default_factory=list)
    """After a failed verification: why the failing nodes fail (``Cluster.diagnose``), for the panel and the report."""

    @property
    def facts(self) -> ClusterFacts | None:
        """Facts of every known node (None before discovery)."""
        if not self.nodes:
            return None
        from wizard.engine.facts import ClusterFacts

        return ClusterFacts(list(self.nodes.values()))

    @property
    def is_demo(self) -> bool:
        """True when the connected cluster is the built-in simulation."""
        return bool(self.info and self.info.demo) or (self.info is None and self.demo is not None)

    def get(self, dotted: str, default: Any = None) -> Any:
        """One answer by dotted path (``driver.version``)."""
        return get_path(self.answers, dotted, default)

    def set(self, dotted: str, value: Any) -> None:
        """Change one answer; the results derived from the plan are stale afterwards."""
        if self.get(dotted) == value:
            return
        set_path(self.answers, dotted, value)
        self._reset(lambda owned: owned.stale_on(dotted))

    def replace_answers(self, answers: dict[str, Any]) -> None:
        """Every answer at once (prefilled from the live policy): what any answer makes stale is reset."""
        self.answers = answers
        self._reset(lambda owned: bool(owned.answers))

    def adopt_cluster(self, cluster: Cluster | None) -> Cluster | None:
        """Another cluster is connected (or none): what was learnt from the one before is reset; returns that one."""
        old, self.cluster = self.cluster, cluster
        self.info = cluster.info if cluster is not None else None
        self._reset(lambda owned: owned.cluster)
        return old

    def reset_step(self, name: str) -> None:
        """What step ``name`` owns, back to its defaults (the step runs its checks again)."""
        from screens.flow import step_named

        owned = step_named(name).owns
        self._reset(lambda item: item in owned)

    def _reset(self, stale: Callable[[Owned], bool]) -> None:
        """Every owned field ``stale`` says is stale, back to its default (from :data:`screens.flow.OWNED`)."""
        from screens.flow import OWNED

        for owned in OWNED:
            if stale(owned):
                setattr(self, owned.field, _default(owned.field))

    def effective_answers(self) -> dict[str, Any]:
        """The answers the plan is made of: those of the steps that apply (a skipped step's fields were
        never shown, so they must not reach the plan: a pre-installed run ignores an old driver version)."""
        from screens.flow import STEPS

        skipped = [step for step in STEPS if not step.applies(self)]
        dropped = {key for step in skipped for key in step.fields}
        effective = {key: value for key, value in self.answers.items() if key not in dropped}
        for step in skipped:  # what the plan takes from a skipped step all the same (its operands' registry)
            for dotted in step.spec.kept_when_skipped:
                value = self.get(dotted)
                if value not in (None, "", [], {}):
                    set_path(effective, dotted, copy.deepcopy(value))
        return effective

    def validate(self) -> tuple[Plan | None, list[FieldError]]:
        """The plan if the answers are valid, else the field errors (each naming its field)."""
        from pydantic import ValidationError

        from wizard.engine.answers import plan_errors
        from wizard.engine.plan import Plan

        try:
            return Plan.model_validate(self.effective_answers()), []
        except ValidationError as exc:
            return None, plan_errors(exc)

    def plan(self) -> Plan | None:
        """The validated plan, or None while some answer is invalid."""
        return self.validate()[0]

    def connected(self) -> Cluster:
        """The connected cluster; a step that needs one is only reachable after Connect (ClusterError otherwise)."""
        if self.cluster is None:
            from wizard.cluster.errors import ClusterError

            raise ClusterError("not connected to a cluster", "go back to Connect and connect first")
        return self.cluster

    def valid_plan(self) -> Plan:
        """The validated plan; steps past Paths are only reachable with one (a FieldError-worded error otherwise)."""
        plan, errors = self.validate()
        if plan is None:
            from wizard.cluster.errors import ClusterError

            first = errors[0].message if errors else "the answers are incomplete"
            raise ClusterError(f"the plan is not valid: {first}", "go back to the step that owns that field")
        return plan

    def errors_for(self, prefixes: Iterable[str]) -> dict[str, str]:
        """Field errors under the given answers keys, by dotted field name."""
        wanted = tuple(prefixes)
        _, errors = self.validate()
        found: dict[str, str] = {}
        for error in errors:
            if any(error.field == p or error.field.startswith(p + ".") for p in wanted):
                found.setdefault(error.field, error.message)
        return found

    def step_valid(self, step: str) -> bool:
        """No field owned by ``step`` has an error."""
        return not self.errors_for(steps.fields_of(step))

    def load(self, path: Path, *, given: bool) -> None:
        """Prefill from an answers file; a file with errors still prefills what it can."""
        from wizard.engine.answers import AnswersError, load_answers

        self.answers_path = path
        self.answers_given = given
        if not path.exists():
            if given:
                self.load_errors.append(f"{display_path(path)}: no such file; it will be created")
            return
        try:
            plan, doc = load_answers(path, nodes_later=True)  # the Driver step fills a source left to the nodes
        except AnswersError as exc:
            self.load_errors.extend(e.render(display_path(path)) for e in exc.errors)
            raw = _read_raw(path)
            if raw is not None:
                self.answers = raw
            return
        self.answers = plan.answers_dict()
        self.answers_doc = doc

    def save(self, step: str) -> None:
        """Save the answers (valid or, mid-way, as far as they go) and the step reached."""
        from wizard.atomic_write import write_private
        from wizard.engine.answers import save_answers

        plan, _ = self.validate()
        if plan is not None:
            save_answers(self.answers_path, plan, self.answers_doc)
        else:
            import io

            from ruamel.yaml import YAML

            buffer = io.StringIO()
            buffer.write(INCOMPLETE_HEADER)
            yaml = YAML(typ="safe", pure=True)
            yaml.default_flow_style = False
            yaml.dump(self.answers, buffer)
            write_private(self.answers_path, buffer.getvalue())
        import json

        write_private(resume_path(self.answers_path), json.dumps({"step": step, **self.run_identity()}) + "\n")

    def run_identity(self) -> dict[str, Any]:
        """What ties a saved run to its cluster: the demo scenario, or the context and API server."""
        info = self.info
        return {
            "demo": self.demo if self.is_demo else None,
            "context": info.context if info else self.context,
            "server": info.server if info and not self.demo else "",
        }

    def saved_run(self) -> dict[str, Any]:
        """The state file of a previous run next to the answers (``{}`` when there is none)."""
        import json

        try:
            data = json.loads(resume_path(self.answers_path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def saved_verified(self) -> bool:
        """The previous run ended with a verified install (:meth:`mark_verified`)."""
        return self.saved_run().get("verified") is True

    def saved_step(self) -> str | None:
        """The step a previous run stopped at, when a state file is next to the answers."""
        step = self.saved_run().get("step")
        return step if isinstance(step, str) else None

    def saved_run_matches(self) -> bool:
        """The saved run was made on this cluster (same context and server) or this demo scenario."""
        saved = self.saved_run()
        if not saved or self.info is None:
            return False
        mine = self.run_identity()
        return all(saved.get(key) == mine[key] for key in ("demo", "context", "server"))

    def start_over(self) -> None:
        """Start from the defaults: no answers of an earlier run, no resume point."""
        self.answers = {"version": 1}
        self.answers_doc = None
        self._reset(lambda owned: owned.run)
        self.forget_progress()

    def forget_progress(self) -> None:
        """Drop the resume point (on request: Start over)."""
        resume_path(self.answers_path).unlink(missing_ok=True)

    def mark_verified(self) -> None:
        """The install is verified: the next run on this cluster is offered these answers (not the defaults)."""
        import json

        from wizard.atomic_write import write_private

        identity = {"step": steps.VERIFY.name, "verified": True, **self.run_identity()}
        with contextlib.suppress(OSError):  # a resume point not written costs an offer, never the verification
            write_private(resume_path(self.answers_path), json.dumps(identity) + "\n")

    def keep_previous_answers(self) -> Path | None:
        """Before a run that does not start from the saved answers replaces them: a copy beside them (or None)."""
        from wizard.atomic_write import write_private

        try:
            text = self.answers_path.read_text(encoding="utf-8")
        except OSError:
            return None
        return write_private(previous_path(self.answers_path), text)


def _default(name: str) -> Any:
    """The default of ``WizardState`` field ``name`` (a fresh one for a list or dict)."""
    spec = _FIELDS[name]
    if spec.default_factory is not MISSING:
        return spec.default_factory()
    return spec.default


_FIELDS = {spec.name: spec for spec in fields(WizardState)}


def _read_raw(path: Path) -> dict[str, Any] | None:
    """The answers file as plain data, without validation (to prefill a file that has errors)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError):
        return None
    return data if isinstance(data, dict) else None
