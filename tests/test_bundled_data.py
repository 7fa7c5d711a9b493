"""The generated JSON twins of the bundled YAML data (``make data``) are current and say the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard import bundled as resources

ASSETS = Path(__file__).resolve().parent.parent / "assets"
SOURCES = [
    *sorted((ASSETS / "operator").rglob("*.yaml")),
    *sorted((ASSETS / "advice").rglob("*.yaml")),
    ASSETS / "catalog.yaml",
]


def test_the_generator_covers_every_operator_yaml_the_advice_and_the_catalog() -> None:
    """What every render reads: the operator's data, the advice's wording, the catalog (issue 38)."""
    names = {p.relative_to(ASSETS).as_posix() for p in SOURCES}
    assert {"operator/v26.7.0/nvidia.com_clusterpolicies.yaml", "advice/advice.yaml", "catalog.yaml"} <= names
    assert set(resources.GENERATED_FOLDERS) == {"operator", "advice"}
    assert set(resources.GENERATED_FILES) == {"catalog.yaml"}
    assert {p.relative_to(ASSETS).with_suffix(".yaml").as_posix() for p in resources.generated_files(ASSETS)} == names


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


def test_the_advice_and_the_catalog_are_read_from_their_twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every render reads both; it parses no YAML for them (ruamel's parse of the advice alone was ~4 CPU-ms of a
    render, issue 38): here each twin says something else than its YAML, and the twin is what is read."""
    from wizard.engine import advice, catalog

    wording = json.loads((ASSETS / "advice" / "advice.json").read_text(encoding="utf-8"))
    code = next(iter(wording["advice"]))
    wording["advice"][code]["message"] = "from the twin"
    (tmp_path / "advice").mkdir()
    (tmp_path / "advice" / "advice.json").write_text(json.dumps(wording), encoding="utf-8")
    (tmp_path / "advice" / "advice.yaml").write_text("advice: {}\n", encoding="utf-8")
    entries = json.loads((ASSETS / "catalog.json").read_text(encoding="utf-8"))
    entries["entries"] = entries["entries"][:1]
    (tmp_path / "catalog.json").write_text(json.dumps(entries), encoding="utf-8")
    (tmp_path / "catalog.yaml").write_text("schema: 1\nentries: []\n", encoding="utf-8")
    monkeypatch.setenv(resources.ASSETS_ENV, str(tmp_path))
    advice._wording.cache_clear()
    catalog.catalog_entries.cache_clear()
    try:
        assert advice._wording()[code]["message"] == "from the twin"
        assert len(catalog.catalog_entries()) == 1
    finally:  # the next reader gets the bundled data again
        advice._wording.cache_clear()
        catalog.catalog_entries.cache_clear()
