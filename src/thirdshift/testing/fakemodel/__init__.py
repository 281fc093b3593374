"""A scripted model on 127.0.0.1 that the REAL agent CLIs talk to; no pytest needed.

``claude``, ``codex``, ``opencode``, ``gemini`` and ``qwen`` each have their scripts.

The real CLI runs its real tools (its Bash tool, its unified exec, its background tasks, its
``--resume``); only the model's answers come from a script::

    from thirdshift.testing.steps import background, say

    with FakeModel() as model:
        model.claude.script(background("sleep 300"), say("started"))
        env = model.env(home=tmp / "home")
        subprocess.run(["claude", "-p", ...], env=env, ...)
        assert model.claude.requests[-1].user_text == ...

See ``docs/fake-model.md`` and ``docs/fake-model-chat-and-gemini.md``. The pytest plugin wraps it in
the ``fake_model`` fixture.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from thirdshift.testing.fakemodel._admission import new_key as _new_key
from thirdshift.testing.fakemodel._environment import fake_model_env as _fake_model_env
from thirdshift.testing.fakemodel._script import ModelRequest, ScriptedModel
from thirdshift.testing.fakemodel._server import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONNECTIONS,
    LOOPBACK,
)
from thirdshift.testing.fakemodel._server import (
    ModelServer as _ModelServer,
)

__all__ = [
    "FakeModel",
    "ModelRequest",
    "ScriptedModel",
]


_SHUTDOWN_POLL = 0.05  # seconds; how soon close() is noticed (the stdlib's default is 0.5)


class FakeModel:
    """The model APIs of five CLIs, scripted, on 127.0.0.1 only.

    Anthropic Messages (Claude Code), OpenAI Responses (Codex), OpenAI Chat Completions
    (opencode, Qwen Code) and the Gemini API (Gemini CLI). ``claude``, ``codex``, ``opencode``,
    ``gemini`` and ``qwen`` hold each CLI's scripts and recorded requests. Use it as a context
    manager, or call :meth:`start` and :meth:`close`. ``on_script(cli)`` is called whenever a
    script is queued for ``cli`` (the pytest fixture checks there that the CLI is installed).

    It answers only requests to its own address that carry its :attr:`key` (the one
    :meth:`env` hands the CLIs); others get 421 or 401 in the API's error shape. A request body
    over ``max_body`` bytes is refused (413) unread; a connection over ``max_connections`` at
    once is answered 503 and closed. See ``docs/fake-model.md``.
    """

    def __init__(
        self,
        *,
        on_script: Callable[[str], None] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        for name, cap in (("max_body", max_body), ("max_connections", max_connections)):
            if cap < 1:
                raise ValueError(f"FakeModel: {name} must be at least 1, got {cap}")
        self._key = _new_key()
        self._max_body = max_body
        self._max_connections = max_connections
        self.claude = ScriptedModel("claude", on_script)
        self.codex = ScriptedModel("codex", on_script)
        self.opencode = ScriptedModel("opencode", on_script)
        self.gemini = ScriptedModel("gemini", on_script)
        self.qwen = ScriptedModel("qwen", on_script)
        self._server: _ModelServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeModel:
        """Listen on 127.0.0.1 and an ephemeral port; returns self."""
        if self._server is not None:
            raise RuntimeError("FakeModel is already started")
        self._server = _ModelServer(
            {model.cli: model for model in self._models()},
            key=self._key,
            max_body=self._max_body,
            max_connections=self._max_connections,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _SHUTDOWN_POLL},
            name="thirdshift-fake-model",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; requests held by ``hang()`` or ``stall()`` are let go."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.closing.set()
        server.shutdown()
        server.server_close()
        thread.join()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(
        self,
        error_class: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, the base URL the CLIs are given (under it for some)."""
        if self._server is None:
            raise RuntimeError("FakeModel is not started")
        return f"http://{LOOPBACK}:{self._server.port}"

    @property
    def key(self) -> str:
        """This fake model's own key, made when it was: the only one it answers."""
        return self._key

    def env(
        self, home: Path, *, base: Mapping[str, str] | None = None, subscriber: bool = False
    ) -> dict[str, str]:
        """The environment that runs the real CLIs against this model, isolated in ``home``.

        ``base`` (default ``os.environ``) with: ``HOME=home``, ``CODEX_HOME=home/.codex`` (its
        ``config.toml`` written), opencode's, Gemini CLI's and Qwen Code's settings written
        under ``home``, the URL and :attr:`key` for each CLI, telemetry, auto-update
        and error reporting off, loopback exempt from proxies, and every variable that could
        carry real credentials or another endpoint removed. ``subscriber=True`` gives Claude
        the key as a login token instead of an API key, so that it speaks as to a subscriber: its
        ``rate_limit_event`` lines, and "You've hit your session limit" for ``quota_spent()``.
        """
        return _fake_model_env(self.url, home, base, key=self._key, subscriber=subscriber)

    def problems(self, *, include_unconsumed: bool = True) -> list[str]:
        """Requests that found no script, and (unless told not to) script left unused."""
        return [
            problem
            for model in self._models()
            for problem in model.problems(include_unconsumed=include_unconsumed)
        ]

    def _models(self) -> tuple[ScriptedModel, ...]:
        return (self.claude, self.codex, self.opencode, self.gemini, self.qwen)
