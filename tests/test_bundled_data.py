"""The generated JSON twins of the bundled operator YAML (``make data``) are current and say the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard import bundled as resources

ASSETS = Path(__file__).resolve().parent.parent / "assets"
SOURCES = sorted((ASSETS / "operator").rglob("*.yaml"))


def test_the_generator_covers_every_operator_yaml() -> None:
    assert "operator/v26.7.0/nvidia.com_clusterpolicies.yaml" in {p.relative_to(ASSETS).as_posix() for p in SOURCES}
    assert set(resources.GENERATED_FOLDERS) == {"operator"}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.relative_to(ASSETS).as_posix())
def test_generated_json_is_up_to_date_and_says_what_the_yaml_says(source: Path) -> None:
    twin = source.with_suffix(".json")
    assert twin.exists(), f"{twin.name} is missing: run `make data`"
    data = resources.parse_yaml(source.read_text(encoding="utf-8"))
    text = twin.read_text(encoding="utf-8")
    assert json.loads(text) == data, f"{twin} disagrees with its YAML: run `make data`"
    assert text == resources.json_twin(data), f"{twin} is stale: run `make data`"


def test_loaders_read_the_json_twin_with_the_yaml_key_order() -> None:
    values = resources.operator_values("v26.7.0")
    source = resources.parse_yaml(resources.asset_text("operator", "v26.7.0", "gpu-operator-values.yaml"))
    assert list(values) == list(source)  # the chart's order is the rendered order
    crd = resources.operator_crd("v26.7.0", "nvidiadrivers")
    assert crd["spec"]["names"]["kind"] == "NVIDIADriver"


def test_make_data_writes_only_what_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "operator" / "v1"
    folder.mkdir(parents=True)
    (folder / "values.yaml").write_text("b: 1\na: [x, 'on', null, 1.5]\n", encoding="utf-8")
    assert resources.main([str(tmp_path)]) == 0
    assert (folder / "values.json").read_text(encoding="utf-8") == '{"b":1,"a":["x","on",null,1.5]}\n'
    assert "wrote" in capsys.readouterr().out
    assert resources.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
