"""The bundle's values through the operator's own chart: what ``helm template`` says of them (``gpu-wizard bundle``).

The wizard's own CRD check (:func:`wizard.engine.render.crd_errors`) validates the objects the wizard renders; Helm
installs the objects the *chart* renders from the values, and refuses values its templates ``fail`` on (the chart's
``validations.yaml``). When a ``helm`` binary and a local chart are at hand, the CLI runs ``helm template`` (the
cluster room's runner) and this module judges its answer: a refusal is a finding, and every ClusterPolicy and
NVIDIADriver the chart renders is checked against the release's CRD (what the API server would refuse). A check
that could not run is said as such (:attr:`ChartCheck.ran` false), in the bundle's README and on stderr, never
taken for a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from wizard.bounded_read import RENDERED_CHART, InputError, check_yaml
from wizard.engine.crd_schema import validate_against_crd
from wizard.engine.releases import bundle_of
from wizard.engine.textsafe import printable

CHECKED_KINDS = ("ClusterPolicy", "NVIDIADriver")
TAIL_LINES = 3


@dataclass(frozen=True)
class ChartCheck:
    """What rendering the values through the chart found."""

    ran: bool
    how: str
    """What rendered (``helm template of chart ./gpu-operator``), or why nothing did."""
    findings: tuple[str, ...] = field(default=())

    def readme(self) -> list[str]:
        """The README's lines about it."""
        if not self.ran:
            return [
                f"The values were **not** rendered through the operator's chart: {self.how}. This is not a pass: run"
                " `helm template` of the chart with these values yourself, or write the bundle again where `helm` is"
                " on PATH with `--chart DIR` (the chart's folder: rendered offline, nothing fetched).",
            ]
        verdict = "see `FINDINGS`" if self.findings else "the chart accepted them and its objects match the CRDs"
        return [f"The values were rendered through the operator's chart ({self.how}): {verdict}."]


def not_checked(why: str) -> ChartCheck:
    return ChartCheck(False, printable(why))


def refused(how: str, output: str) -> ChartCheck:
    """helm exited non-zero: its last lines are the finding (the template's ``fail`` message, a parse error)."""
    tail = " | ".join(line.strip() for line in printable(output).splitlines()[-TAIL_LINES:] if line.strip())
    return ChartCheck(True, how, (f"helm template refuses these values: {tail or 'no message'}",))


def _documents(text: str) -> list[Any]:
    check_yaml(text, RENDERED_CHART)
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 1)  # what Kubernetes' YAML reader (go-yaml v2) reads: `yes` is a bool
    return [d for d in yaml.load_all(text) if isinstance(d, dict)]


def rendered(how: str, text: str, release: str) -> ChartCheck:
    """helm template's output: every ClusterPolicy and NVIDIADriver it holds against ``release``'s CRDs."""
    bundle = bundle_of(release)
    if bundle is None:
        return not_checked(f"{release} is not a release gpu-wizard knows the CRDs of")
    try:
        docs = _documents(text)
    except (InputError, YAMLError) as exc:
        return ChartCheck(True, how, (f"helm template's output cannot be read: {printable(str(exc)).splitlines()[0]}",))
    found: list[str] = []
    checked = [d for d in docs if d.get("kind") in CHECKED_KINDS]
    for doc in checked:
        name = str((doc.get("metadata") or {}).get("name") or "")
        found += [
            f"the API server would refuse the chart's {doc['kind']}/{name}: {error}"
            for error in validate_against_crd(doc, bundle)
        ]
    if not any(d.get("kind") == "ClusterPolicy" for d in checked):
        found.append("the chart rendered no ClusterPolicy from these values")
    return ChartCheck(True, how, tuple(printable(line) for line in found))
