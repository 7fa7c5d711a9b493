"""``gpu-wizard examples`` and ``answers init --example``: the README's examples from the package, not the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def test_examples_are_listed_and_written_as_bundled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples"]) == 0
    listed = capsys.readouterr().out
    assert "sle-micro-precompiled            precompiled mode, 3 nodes" in listed
    assert main(["examples", "preinstalled", "-d", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    for suffix in (".answers.yaml", ".nodes.json"):
        written = tmp_path / f"preinstalled{suffix}"
        assert written.read_text() == (ROOT / "assets" / "examples" / f"preinstalled{suffix}").read_text()
    assert f"render them with: gpu-wizard render --answers {tmp_path}/preinstalled.answers.yaml" in err
    assert main(["examples", "preinstalled", "-d", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-wizard: error: {tmp_path}/preinstalled.answers.yaml: already exists; pass --force to overwrite\n"
    )
    assert main(["examples", "preinstalled", "-d", str(tmp_path), "--force"]) == 0


def test_answers_init_from_an_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "answers.yaml"
    assert main(["answers", "init", "--example", "ubuntu-upstream-airgapped", "-o", str(target)]) == 0
    assert target.read_text() == (ROOT / "assets/examples/ubuntu-upstream-airgapped.answers.yaml").read_text()
    assert "(the ubuntu-upstream-airgapped example)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["answers", "init", "--example", "no-such-example"])
    assert "invalid choice: 'no-such-example'" in capsys.readouterr().err


def test_readme_shows_how_to_install_and_what_an_installed_tool_offers() -> None:
    from wizard.cli.common import subparsers
    from wizard.cli.examples import example_names
    from wizard.cli.main import build_parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make demo" in quick and "make test" in quick
    install = readme.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    for command in ("pipx install .", "uv tool install .", "kubectl gpu-wizard", "gpu-wizard completion bash"):
        assert command in install, command
    for name in re_findall(r"gpu-wizard examples ([a-z][a-z0-9-]+)", readme):
        assert name in example_names(), name
    # every registry flag the README names exists on the commands that check images
    apply = subparsers(build_parser())["apply"]
    flags = {s for a in apply._actions for s in a.option_strings}
    for flag in set(re_findall(r"(--registry-[a-z-]+|--no-host-registry-config)", readme)):
        assert flag in flags, flag


def re_findall(pattern: str, text: str) -> list[str]:
    import re

    return re.findall(pattern, text)
