"""gpu-wizard's folders and the shared XDG config folder, from one helper (platformdirs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard import paths
from wizard.registry.auth import auth_file_paths


def test_xdg_variables_are_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert paths.config_dir() == tmp_path / "config" / "gpu-wizard"
    assert paths.backups_dir() == tmp_path / "state" / "gpu-wizard" / "backups"
    assert tmp_path / "config" / "containers" / "auth.json" in auth_file_paths()


def test_defaults_are_under_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "REGISTRY_AUTH_FILE", "DOCKER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.config_dir() == tmp_path / ".config" / "gpu-wizard"
    assert paths.state_dir() == tmp_path / ".local" / "state" / "gpu-wizard"
    assert auth_file_paths() == [
        tmp_path / ".config" / "containers" / "auth.json",
        tmp_path / ".docker" / "config.json",
    ]
