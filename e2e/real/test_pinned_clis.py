"""The pinned real CLIs: installed at the lockfile's versions, and found by real_cli tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pinned_clis import (
    CLIS_DIR,
    PINNED_BIN,
    REQUIRE_ENV,
    missing,
    path_without_clis,
    pinned_first_on_path,
    verdict,
)

from thirdshift.testing.fakemodel._installing import NPM_PACKAGES as PACKAGES


def test_the_lockfile_pins_exactly_the_versions_package_json_names() -> None:
    wanted = json.loads((CLIS_DIR / "package.json").read_text())["dependencies"]
    locked = json.loads((CLIS_DIR / "package-lock.json").read_text())["packages"]
    assert set(wanted) == set(PACKAGES.values())
    for package, version in wanted.items():
        assert version[0].isdigit(), f"{package} must be pinned exactly, not {version!r}"
        assert locked[f"node_modules/{package}"]["version"] == version


@pytest.mark.real_cli
@pytest.mark.parametrize("cli", sorted(PACKAGES))
def test_the_cli_on_path_is_the_pinned_one(cli: str) -> None:
    pinned = json.loads((CLIS_DIR / "package.json").read_text())["dependencies"][PACKAGES[cli]]
    found = shutil.which(cli)
    assert found is not None
    assert Path(found).parent == CLIS_DIR / "node_modules" / ".bin"
    version = subprocess.run(
        [cli, "--version"], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    assert pinned in version


def test_a_missing_cli_is_named_in_one_line_with_how_to_install_it(tmp_path: Path) -> None:
    problem = missing(["claude"], bin_dir=tmp_path)
    assert problem == f"the pinned claude is not installed in {tmp_path} (run `make clis`)"


def test_no_node_is_a_missing_cli_too(tmp_path: Path) -> None:
    problem = missing(["claude"], bin_dir=tmp_path, path=str(tmp_path))
    assert problem is not None
    assert problem.startswith("node is not installed")


def test_absence_skips_unless_the_environment_requires_the_real_clis() -> None:
    assert verdict("x", {}) == ("skip", "real_cli: x")
    assert verdict("x", {REQUIRE_ENV: "0"})[0] == "skip"
    action, text = verdict("x", {REQUIRE_ENV: "1"})
    assert action == "fail"
    assert text == f"real_cli: x; {REQUIRE_ENV}=1 makes this a failure"
    assert "\n" not in text


def test_the_gate_skips_a_test_whose_cli_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="the pinned no-such-cli is not installed"):
        pinned_first_on_path(["no-such-cli"], monkeypatch)


def test_the_gate_fails_it_when_the_real_clis_are_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_ENV}=1 makes this a failure"):
        pinned_first_on_path(["no-such-cli"], monkeypatch)


@pytest.mark.real_cli("claude")
def test_the_gate_puts_the_pinned_clis_first_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")
    pinned_first_on_path(["claude"], monkeypatch)
    assert shutil.which("claude") == str(PINNED_BIN / "claude")


def test_a_path_without_clis_hides_a_global_cli_and_keeps_its_neighbours(tmp_path: Path) -> None:
    global_bin = tmp_path / "usr-bin"
    global_bin.mkdir()
    for program in ("claude", "git"):
        (global_bin / program).write_text("#!/bin/sh\nexit 99\n")
        (global_bin / program).chmod(0o755)

    path = path_without_clis(tmp_path / "links", f"{global_bin}{os.pathsep}/nonexistent")

    assert shutil.which("claude", path=path) is None
    assert shutil.which("git", path=path) == str(tmp_path / "links" / "0" / "git")
    assert path.split(os.pathsep)[1] == "/nonexistent"
