"""``thirdshift fake-model``: served from a terminal, its lines pasted into a shell, then asked.

The client here speaks Chat Completions as Qwen Code does, from a shell that read only the
printed lines; the real CLIs are asked in ``e2e/real/test_fake_model_command_real.py``.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from served_model import THIRDSHIFT, Served, fake_model

# A request as Qwen Code sends it (a shell tool offered: a scripted request), to the base URL
# and with the key the pasted lines give; prints the answer's text, or the HTTP status.
ASK_AS_QWEN = """
import json, os, sys, urllib.error, urllib.request
body = {
    "model": os.environ["OPENAI_MODEL"],
    "messages": [{"role": "user", "content": "Say hi."}],
    "tools": [{"type": "function", "function": {"name": "run_shell_command",
               "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}],
}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "content-type": "application/json"},
)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    answer = json.load(opener.open(request, timeout=30))
except urllib.error.HTTPError as error:
    print(error.code)
else:
    print(answer["choices"][0]["message"]["content"])
"""


def ask_as_qwen(served: Served, cwd: Path) -> str:
    done = served.in_its_shell(sys.executable, "-c", ASK_AS_QWEN, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_every_session_plays_the_script_file_with_the_pasted_environment(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"say": "Hello from the script."}]))
    home = tmp_path / "a home's folder"  # pasted lines must quote it

    with fake_model(tmp_path, "--script", str(script), "--home", str(home)) as served:
        first = ask_as_qwen(served, tmp_path)
        second = ask_as_qwen(served, tmp_path)
        code, stderr = served.stop()

    assert (first, second) == ("Hello from the script.", "Hello from the script.")
    assert code == 0
    assert stderr.count("/qwen/v1/chat/completions: end_turn") == 2, stderr
    assert "Traceback" not in stderr
    assert f"export HOME={home}" not in served.printed  # quoted, or the shell splits it
    assert f"# HOME={home} holds each CLI's settings" in served.printed
    for settings in (".claude/settings.json", ".codex/config.toml", ".qwen/settings.json"):
        assert (home / settings).is_file()


def test_each_session_takes_the_next_script_and_the_last_plays_on(tmp_path: Path) -> None:
    scripts = []
    for number in (1, 2):
        scripts += ["--script", str(tmp_path / f"{number}.json")]
        (tmp_path / f"{number}.json").write_text(json.dumps([{"say": f"Script {number}."}]))

    with fake_model(tmp_path, *scripts) as served:
        said = [ask_as_qwen(served, tmp_path) for _ in range(3)]
        served.stop()

    assert said == ["Script 1.", "Script 2.", "Script 2."]


def test_without_a_script_it_ends_the_turn_with_its_default_reply(tmp_path: Path) -> None:
    with fake_model(tmp_path) as served:
        answer = ask_as_qwen(served, tmp_path)
        served.stop()

    assert answer == "Done."


def test_a_cli_not_named_is_answered_that_there_is_no_script(tmp_path: Path) -> None:
    with fake_model(tmp_path, "--cli", "claude", "codex") as served:
        answer = ask_as_qwen(served, tmp_path)
        _, stderr = served.stop()

    assert answer == "400"
    assert "qwen: /qwen/v1/chat/completions: no script" in stderr
    assert "claude -p --permission-mode auto 'Say hi.'" in served.printed
    assert "qwen -y -p" not in served.printed


def test_the_pasted_lines_unset_what_would_send_a_cli_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "my real claude"))

    with fake_model(tmp_path) as served:
        served.stop()

    assert "unset CLAUDE_CONFIG_DIR\n" in served.printed
    assert "export PATH=" not in served.printed  # nothing that was already so


def test_the_port_asked_for_is_the_one_served(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with fake_model(tmp_path, "--port", str(port)) as served:
        served.stop()

    assert f"export ANTHROPIC_BASE_URL=http://127.0.0.1:{port}\n" in served.printed


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_it_with_0_and_no_traceback(tmp_path: Path, signum: int) -> None:
    with fake_model(tmp_path) as served:
        code, stderr = served.stop(signum)

    assert code == 0
    assert stderr == "thirdshift fake-model: stopped\n"


def test_a_home_it_prepared_before_is_taken_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with fake_model(tmp_path, "--home", str(home)) as served:
        served.stop()
    (home / ".claude" / "projects").mkdir()  # what the CLI leaves there

    with fake_model(tmp_path, "--home", str(home)) as served:
        code, _ = served.stop()

    assert code == 0


def bad_input(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Each bad invocation, and the start of the one line it must be refused with."""
    (tmp_path / "not-json.json").write_text("[{")
    (tmp_path / "unknown-step.json").write_text('[{"die": "SIGKILL"}]')
    (tmp_path / "bad-argument.json").write_text('[{"say": 5}]')
    in_use = tmp_path / "someone's home"
    in_use.mkdir()
    (in_use / ".bashrc").write_text("")
    return {
        "missing script": (
            ["--script", str(tmp_path / "nowhere.json")],
            f"thirdshift: fake-model --script: cannot read {tmp_path / 'nowhere.json'}: No such",
        ),
        "script not JSON": (
            ["--script", str(tmp_path / "not-json.json")],
            f"thirdshift: fake-model --script: {tmp_path / 'not-json.json'} is not JSON",
        ),
        "unknown step": (
            ["--script", str(tmp_path / "unknown-step.json")],
            f"thirdshift: fake-model --script: {tmp_path / 'unknown-step.json'}: step 1: no step "
            'is named "die"',
        ),
        "bad argument": (
            ["--script", str(tmp_path / "bad-argument.json")],
            f"thirdshift: fake-model --script: {tmp_path / 'bad-argument.json'}: step 1 (say): "
            "text must be a string, not 5",
        ),
        "port too large": (["--port", "70000"], "thirdshift: argument --port: a port is 0 to"),
        "port not a number": (["--port", "http"], "thirdshift: argument --port: not a port"),
        "unknown CLI": (["--cli", "aider"], "thirdshift: argument --cli: invalid choice: 'aider'"),
        "a home in use": (
            ["--home", str(in_use)],
            f"thirdshift: fake-model --home {in_use} must be a new or empty",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing script",
        "script not JSON",
        "unknown step",
        "bad argument",
        "port too large",
        "port not a number",
        "unknown CLI",
        "a home in use",
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    args, start = bad_input(tmp_path)[case]

    done = fake_model_exits(tmp_path, *args)

    assert done.returncode == 2
    assert done.stderr.startswith(start), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "someone's home" / ".claude").exists()


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        done = fake_model_exits(tmp_path, "--port", str(port))

    assert done.returncode == 2
    assert done.stderr == (
        f"thirdshift: fake-model: cannot listen on 127.0.0.1 port {port}: Address already in use\n"
    )
    assert done.stdout == ""


def fake_model_exits(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THIRDSHIFT, "fake-model", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_help_names_the_command_and_its_script_file(tmp_path: Path) -> None:
    top = subprocess.run([THIRDSHIFT, "--help"], capture_output=True, text=True, check=True)
    own = fake_model_exits(tmp_path, "--help")

    assert "fake-model" in top.stdout
    assert own.returncode == 0
    assert '[{"run": "ls"}, {"say": "Listed them."}]' in " ".join(own.stdout.split())
