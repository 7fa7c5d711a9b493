"""Chart parity: the operator's own Helm chart, rendered with gpu-wizard's ``-o helm`` values, is the oracle.

For each release and driver mode, gpu-wizard's ``-o helm`` values (the text ``helm_yaml`` writes) are
fed to that release's chart (``shared/operator-charts/<release>``, rendered offline by PyPI's
``helm-python-sdk``), and the chart's ClusterPolicy and NVIDIADriver are compared with gpu-wizard's
``-o yaml`` documents (the text ``to_yaml`` writes), field by field. A missing field equals Go's zero
value ("", 0, false, [] or {}), as it does for the operator reading the object. Every difference that
is allowed is listed in ``ALLOWED`` with its reason; any other difference fails, and so does an
allowance that no case needs any more.

The chart cannot be rendered without ``helm-python-sdk`` and the charts: under ``CI=true`` that
fails, elsewhere the tests skip with the reason.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.chart_parity import (
    ALLOWED,
    CASES,
    RELEASES,
    case_differences,
    render_chart,
    rendered_case,
)
from wizard.engine.render import helm_yaml


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("release", RELEASES)
def test_chart_renders_what_gpu_wizard_renders(release: str, case: str) -> None:
    problems, _ = case_differences(release, case)
    assert not problems, f"{release} {case}: the chart and gpu-wizard differ:\n" + "\n".join(problems)


def test_every_allowed_difference_is_still_needed() -> None:
    used: set[tuple[str, str, str]] = set()
    for release in RELEASES:
        for case in CASES:
            used |= case_differences(release, case)[1]
    assert set(ALLOWED) - used == set(), "allowances no case needs any more: remove them from ALLOWED"


def test_the_nvidiadriver_case_deploys_the_chart_default_cr() -> None:
    """The NVIDIADriver comparison is not vacuous: the chart renders CR ``default`` from gpu-wizard's values."""
    for release in RELEASES:
        _, values = rendered_case(release, "nvidiadriver")
        assert values["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": True}
        kinds = [d["kind"] for d in render_chart(release, json.dumps(values, sort_keys=True))]
        assert kinds == ["ClusterPolicy", "NVIDIADriver"], release


@pytest.mark.parametrize("release", RELEASES)
def test_a_chart_that_would_write_the_driver_branch_as_a_number_does_not_deploy_the_default_cr(release: str) -> None:
    """v25.10.1 and v26.3.3 write ``version: 580`` unquoted: a number the CRD refuses. gpu-wizard's values
    then leave ``deployDefaultCR`` off and its Helm header says to apply CR ``default`` from nvidiadrivers.yaml."""
    rendered, values = rendered_case(release, "nvidiadriver-precompiled")
    forced = json.loads(json.dumps(values))
    forced["driver"]["nvidiaDriverCRD"]["deployDefaultCR"] = True
    [driver] = [d for d in render_chart(release, json.dumps(forced, sort_keys=True)) if d["kind"] == "NVIDIADriver"]
    broken = driver["spec"]["version"] == 580
    assert broken is (release != "v26.7.0"), driver["spec"]["version"]
    assert values["driver"]["nvidiaDriverCRD"]["deployDefaultCR"] is not broken
    header = helm_yaml(rendered).split("\ndriver:")[0]
    assert ("# Then apply the NVIDIADriver CRs from nvidiadrivers.yaml: default.\n" in header) is broken
    assert ("unquoted" in header) is broken
