"""What a sandboxed session sees of the files: the mounts, the git folders, the private home.

All in-process, on folders made under ``tmp_path``: nothing is started, nothing mounted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from thirdshift._machine.sandbox.gitdirs import git_view
from thirdshift._machine.sandbox.homes import FOLDER, MOST_ENTRIES, PrivateHome, prepared_home
from thirdshift._machine.sandbox.view import Mount, Seen, mounts, program_roots
from thirdshift._sandbox import SandboxNeeds, StateFolder


def test_a_program_in_node_modules_shows_its_whole_node_modules(tmp_path: Path) -> None:
    modules = tmp_path / "clis" / "node_modules"
    real = modules / "@vendor" / "cli" / "bin" / "cli.js"
    real.parent.mkdir(parents=True)
    real.write_text("#!/usr/bin/env node\n")
    (modules / ".bin").mkdir()
    (modules / ".bin" / "cli").symlink_to("../@vendor/cli/bin/cli.js")

    assert program_roots(modules / ".bin" / "cli") == [modules, modules]


def test_each_link_on_the_way_to_a_program_shows_its_folder(tmp_path: Path) -> None:
    versions = tmp_path / "share" / "cli" / "versions"
    versions.mkdir(parents=True)
    (versions / "2.1").write_text("binary")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cli").symlink_to(versions / "2.1")

    assert program_roots(bin_dir / "cli") == [bin_dir, versions]


def _seen(tmp_path: Path, **given: object) -> Seen:
    worktree = tmp_path / "work"
    worktree.mkdir(exist_ok=True)
    home = PrivateHome(folder=tmp_path / "private", inside=tmp_path / "home")
    fields: dict[str, object] = {
        "worktree": worktree,
        "home": home,
        "program": Path("/usr/bin/true"),
        "path": "/usr/bin",
    }
    fields.update(given)
    return Seen(**fields)  # type: ignore[arg-type]


def test_the_system_is_read_only_and_home_tmp_and_worktree_are_private_or_writable(
    tmp_path: Path,
) -> None:
    made = mounts(_seen(tmp_path))

    assert Mount("ro", Path("/usr"), Path("/usr")) in made
    assert Mount("tmpfs", Path("/tmp")) in made
    assert Mount("rw", tmp_path / "home", tmp_path / "private") in made
    assert Mount("rw", tmp_path / "work", tmp_path / "work") in made
    assert not any(mount.dest in (Path("/home"), Path("/root"), Path("/run")) for mount in made)


def test_secrets_of_the_system_are_hidden(tmp_path: Path) -> None:
    made = {mount.dest: mount for mount in mounts(_seen(tmp_path))}

    if Path("/etc/shadow").exists():
        assert made[Path("/etc/shadow")] == Mount("mask", Path("/etc/shadow"), Path(os.devnull))


def test_a_folder_is_mounted_before_what_is_mounted_inside_it(tmp_path: Path) -> None:
    (tmp_path / "work" / "sub").mkdir(parents=True)
    made = mounts(_seen(tmp_path, write=(tmp_path / "work" / "sub",)))
    order = [mount.dest for mount in made]

    assert order.index(Path("/tmp")) < order.index(tmp_path / "work")
    assert order.index(tmp_path / "work") < order.index(tmp_path / "work" / "sub")


def test_the_logs_folder_is_hidden_wherever_a_bind_would_show_it(tmp_path: Path) -> None:
    logs = tmp_path / "work" / "logs"
    logs.mkdir(parents=True)

    made = mounts(_seen(tmp_path, hidden=(logs,)))

    assert Mount("mask", logs) in made
    assert [mount.dest for mount in made].index(logs) > [mount.dest for mount in made].index(
        tmp_path / "work"
    )


def test_a_hidden_folder_no_bind_shows_needs_no_mask(tmp_path: Path) -> None:
    elsewhere = tmp_path / "logs"
    elsewhere.mkdir()

    assert not any(
        mount.kind == "mask" and mount.dest == elsewhere
        for mount in mounts(_seen(tmp_path, hidden=(elsewhere,)))
    )


# The git folders.


def _git_folder(path: Path) -> None:
    for name in ("objects", "refs", "logs", "hooks", "info"):
        (path / name).mkdir(parents=True)
    (path / "config").write_text("[core]\n")


def test_a_main_checkout_writes_its_git_folder_but_for_hooks_config_and_info(
    tmp_path: Path,
) -> None:
    dotgit = tmp_path / ".git"
    _git_folder(dotgit)

    seen = git_view(tmp_path)

    assert seen.read_only == ()
    assert seen.writable == (dotgit,)
    assert set(seen.guarded) == {dotgit / "hooks", dotgit / "config", dotgit / "info"}


def test_a_linked_worktree_writes_what_a_commit_writes_and_nothing_git_runs_later(
    tmp_path: Path,
) -> None:
    common = tmp_path / "repo" / ".git"
    _git_folder(common)
    own = common / "worktrees" / "issue-42"
    own.mkdir(parents=True)
    (own / "commondir").write_text("../..\n")
    (own / "gitdir").write_text(str(tmp_path / "issue-42" / ".git"))
    worktree = tmp_path / "issue-42"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {own}\n")

    seen = git_view(worktree)

    assert seen.read_only == (common,)
    assert set(seen.writable) == {common / "objects", common / "refs", common / "logs", own}
    assert set(seen.guarded) == {
        common / "hooks",
        common / "config",
        common / "info",
        own / "commondir",
        own / "gitdir",
        worktree / ".git",
    }


@pytest.mark.parametrize("planted", ["link", "fifo", "none", "not-git"])
def test_a_dotgit_that_git_could_not_use_shows_nothing(tmp_path: Path, planted: str) -> None:
    dotgit = tmp_path / ".git"
    if planted == "link":
        dotgit.symlink_to("/etc")
    elif planted == "fifo":
        os.mkfifo(dotgit)
    elif planted == "not-git":
        dotgit.write_text("not a pointer\n")

    assert git_view(tmp_path) == git_view(tmp_path / "nowhere")


# The private home.

CLI = SandboxNeeds(
    state=(
        StateFolder("", copied=(".cli.json",)),
        StateFolder(".cli", copied=("settings.json", "agents"), variable="CLI_HOME"),
    )
)


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir(mode=0o700)  # made by the adapter with the session's log
    home = tmp_path / "home"
    (home / ".cli" / "agents").mkdir(parents=True)
    (home / ".cli.json").write_text("{}")
    (home / ".cli" / "settings.json").write_text('{"user": true}')
    (home / ".cli" / "agents" / "a.md").write_text("agent")
    (home / ".cli" / "projects").mkdir()
    (home / ".cli" / "projects" / "other.jsonl").write_text("another project's session")
    (home / ".ssh").mkdir()
    return home


def test_the_private_home_holds_what_the_cli_needs_and_nothing_else(
    tmp_path: Path, user_home: Path
) -> None:
    private = prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})

    folder = private.folder
    assert folder.is_relative_to(tmp_path / "logs" / FOLDER)
    assert (folder / ".cli.json").read_text() == "{}"
    assert (folder / ".cli" / "settings.json").read_text() == '{"user": true}'
    assert (folder / ".cli" / "agents" / "a.md").read_text() == "agent"
    assert not (folder / ".cli" / "projects").exists()
    assert not (folder / ".ssh").exists()
    assert private.inside == user_home
    assert oct(folder.stat().st_mode & 0o777) == "0o700"


def test_the_private_home_is_kept_per_worktree_with_what_the_cli_wrote(
    tmp_path: Path, user_home: Path
) -> None:
    first = prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})
    (first.folder / ".cli" / "sessions").mkdir()
    (first.folder / ".cli" / "sessions" / "s1.jsonl").write_text("the session")
    other = prepared_home(tmp_path / "logs", tmp_path / "other-work", user_home, CLI, {})

    again = prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})

    assert again.folder == first.folder != other.folder
    assert (again.folder / ".cli" / "sessions" / "s1.jsonl").read_text() == "the session"


def test_what_the_user_has_is_copied_afresh_before_each_call(
    tmp_path: Path, user_home: Path
) -> None:
    first = prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})
    (first.folder / ".cli" / "settings.json").write_text('{"hooks": "planted by the agent"}')

    prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})

    assert (first.folder / ".cli" / "settings.json").read_text() == '{"user": true}'


def test_a_link_the_agent_planted_in_the_private_home_is_never_followed(
    tmp_path: Path, user_home: Path
) -> None:
    first = prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})
    target = tmp_path / "orchestrators-own"
    target.mkdir()
    os.rename(first.folder / ".cli", tmp_path / "moved")
    (first.folder / ".cli").symlink_to(target)

    prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})

    assert list(target.iterdir()) == []
    assert not (first.folder / ".cli").is_symlink()
    assert (first.folder / ".cli" / "settings.json").exists()


def test_a_state_folder_a_variable_puts_outside_home_gets_a_private_one_of_its_own(
    tmp_path: Path, user_home: Path
) -> None:
    elsewhere = tmp_path / "cli-home"
    elsewhere.mkdir()
    (elsewhere / "settings.json").write_text('{"elsewhere": true}')

    private = prepared_home(
        tmp_path / "logs", tmp_path / "work", user_home, CLI, {"CLI_HOME": str(elsewhere)}
    )

    [(folder, inside)] = private.elsewhere
    assert inside == elsewhere
    assert (folder / "settings.json").read_text() == '{"elsewhere": true}'


def test_a_copy_is_bounded_however_many_files_a_folder_holds(
    tmp_path: Path, user_home: Path
) -> None:
    many = user_home / ".cli" / "agents"
    for index in range(MOST_ENTRIES + 50):
        (many / f"{index}.md").write_text("")

    private = prepared_home(tmp_path / "logs", tmp_path / "work", user_home, CLI, {})

    assert len(list((private.folder / ".cli" / "agents").iterdir())) == MOST_ENTRIES
