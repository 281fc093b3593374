"""The opencode, Gemini CLI and Qwen Code captures in tests/transcripts, and what each ends with.

Copied from ``../shared/transcripts`` (stdout, stderr, argv with env names, meta with the exit
code). The expected values were read off the captures by hand, as ``../shared/OTHER-CLIS.md``
describes them, not taken from the readers' output. ``exit_code`` is what the reader's
``finish`` is told: the capture's exit code, or None when the CLI died by a signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_helpers import TRANSCRIPTS, meta_of

from thirdshift.errors import AuthFailed, ResumeTargetMissing, SessionFailed
from thirdshift.harness import GeminiReader, OpencodeReader, QwenReader
from thirdshift.outside import Usage

WORKTREE = Path("/home/dev/work/cc")  # not where they ran: paths stay as the stream has them


@dataclass(frozen=True)
class Capture:
    """What one capture's stream ends with, its progress lines and the CLI's exit."""

    harness: str
    exit_code: int | None
    session_id: str | None
    final_message: str | None
    failed: bool
    summary: str | None
    progress: tuple[str, ...]
    error: str | None = None
    usage: Usage | None = None
    killed: tuple[str, ...] = ()  # none of these CLIs reports killed work in its stream
    failure: type[SessionFailed] | None = None
    """The class a failed session raises: from the stream, else from the last line of stderr
    (an unknown resume id shows there alone); plain ``SessionFailed`` if neither tells."""
    stream_tells: bool = True
    """Whether the reader classifies the failure (False: stderr does)."""


READERS: dict[str, Callable[[Path], OpencodeReader | GeminiReader | QwenReader]] = {
    "opencode": OpencodeReader,
    "gemini": GeminiReader,
    "qwen": QwenReader,
}

_OPENCODE_STEP = Usage(
    turns=1, input_tokens=20, output_tokens=8, cached_input_tokens=0, cost_usd=0.0
)
_OPENCODE_TWO_STEPS = Usage(
    turns=2, input_tokens=40, output_tokens=16, cached_input_tokens=0, cost_usd=0.0
)
_GEMINI_401 = (
    '[API Error: {"error":{"code":401,"message":"mock: Request had invalid authentication '
    'credentials.","status":"UNAUTHENTICATED"}}]'
)
_QWEN_BG = (
    'MOCK-FINAL: tool finished; result was "Background shell started.\\nid: bg_15ed63ed\\n'
    "pid: 20791\\noutput file: /home/dev/home-qwen/.qwen/tmp/"
    "666f468da8764dccb274c732bb0381f105d26411212fec6af3f096424529ec97/background-shells/"
    "c731bf94-e9ac-4802-8e58-06ee9c6f962d/shell-bg_15ed63ed.output\\nstatus file: "
    "/home/dev/home-qwen/.qwen/tmp/666f468da87"
)


def _gemini_usage(tokens_in: int, tokens_out: int, turn_model: str) -> Usage:
    return Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=0,
        models=("gemini-3.5-flash-lite", turn_model),  # the router's model, then the turn's
    )


def _qwen_usage(turns: int, tokens_in: int, tokens_out: int) -> Usage:
    return Usage(
        turns=turns,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=0,
        models=("mock-model",),
    )


CAPTURES: dict[str, Capture] = {
    # opencode: no result line; the turn ended well after a step_finish with reason "stop".
    "opencode-api-401": Capture(
        harness="opencode",
        exit_code=1,
        session_id="ses_dd01ef29affeHzhvDs0RVWNI37",
        final_message=None,
        failed=True,
        summary=None,
        progress=("session started",),
        error="APIError 401: mock: Incorrect API key provided",
        failure=AuthFailed,  # statusCode 401
    ),
    "opencode-bg": Capture(
        harness="opencode",
        exit_code=0,
        session_id="ses_dd02063a2ffexibETwonf7yD0T",
        final_message='MOCK-FINAL: tool finished; result was "started-bg-13129\\n"',
        failed=False,
        summary="2 steps, 40 input tokens (0 cached), 16 output tokens, $0.00",
        progress=("session started", "$ sleep 317 >/dev/null 2>&1 & echo started-bg-$!"),
        usage=_OPENCODE_TWO_STEPS,
        # the `&` child outlived opencode, and the stream says nothing of it
    ),
    "opencode-fg": Capture(
        harness="opencode",
        exit_code=0,
        session_id="ses_dd0209f08ffeTuoT76DpBsYReG",
        final_message='MOCK-FINAL: tool finished; result was "hi-from-tool\\n"',
        failed=False,
        summary="2 steps, 40 input tokens (0 cached), 16 output tokens, $0.00",
        progress=("session started", "$ echo hi-from-tool"),
        usage=_OPENCODE_TWO_STEPS,
    ),
    "opencode-hello": Capture(
        harness="opencode",
        exit_code=0,
        session_id="ses_dd020d818ffe4FqqUDHNEnnIMB",
        final_message="Hello from the mock model.",
        failed=False,
        summary="1 step, 20 input tokens (0 cached), 8 output tokens, $0.00",
        progress=("session started",),
        usage=_OPENCODE_STEP,
    ),
    "opencode-resume-stdin": Capture(
        harness="opencode",
        exit_code=0,
        session_id="ses_dd02063a2ffexibETwonf7yD0T",  # the session of opencode-bg, continued
        final_message="MOCK: continuing the resumed session.",
        failed=False,
        summary="1 step, 20 input tokens (0 cached), 8 output tokens, $0.00",
        progress=("session started",),
        usage=_OPENCODE_STEP,
    ),
    "opencode-resume-unknown": Capture(
        harness="opencode",
        exit_code=1,
        session_id=None,  # stdout is empty; stderr says "Error: Session not found"
        final_message=None,
        failed=True,
        summary=None,
        progress=(),
        failure=ResumeTargetMissing,
        stream_tells=False,
    ),
    "opencode-sigINT-group": Capture(
        harness="opencode",
        exit_code=None,  # died by SIGINT after one step_start
        session_id="ses_dd01849bdffeH3ayucUOBhEduf",
        final_message=None,
        failed=True,
        summary=None,
        progress=("session started",),  # the tool never finished, so it never printed
        failure=SessionFailed,
    ),
    # Gemini CLI: exit 0 without a result is an interruption; 401 exits 145.
    "gemini-api-401": Capture(
        harness="gemini",
        exit_code=145,
        session_id="a6adcecf-06f4-41f0-a5ab-c6f55c3e4511",
        final_message=None,
        failed=True,
        summary="0 input tokens (0 cached), 0 output tokens",
        progress=("session started",),
        error=_GEMINI_401,
        usage=Usage(
            input_tokens=0,
            output_tokens=0,
            cached_input_tokens=0,
            models=("gemini-3.5-flash-lite", "gemini-3.1-pro-preview"),
        ),
        failure=AuthFailed,  # "UNAUTHENTICATED", and exit 145 = 401 & 255
    ),
    "gemini-bgtask": Capture(
        harness="gemini",
        exit_code=0,
        session_id="3d20dbe1-869c-4aca-8e9c-2dbcabcae5fb",
        final_message=(
            'MOCK-FINAL: tool finished; result was {"output": "<untrusted_context>\\nCommand '
            "moved to background (PID: 17835). Output hidden. Press Ctrl+B to view.\\n"
            '</untrusted_context>"}'
        ),
        failed=False,
        summary="60 input tokens (0 cached), 24 output tokens",
        progress=("session started", "$ sleep 317"),
        usage=_gemini_usage(60, 24, "gemini-3.8-flash"),
    ),
    "gemini-fg": Capture(
        harness="gemini",
        exit_code=0,
        session_id="37436de8-4c92-4ff5-bc6f-7ffbcca8d22f",
        final_message=(
            'MOCK-FINAL: tool finished; result was {"output": "<untrusted_context>\\nOutput: '
            'hi-from-tool\\nProcess Group PGID: 17648\\n</untrusted_context>"}'
        ),
        failed=False,
        summary="60 input tokens (0 cached), 24 output tokens",
        progress=("session started", "$ echo hi-from-tool"),
        usage=_gemini_usage(60, 24, "gemini-3.8-flash"),
    ),
    "gemini-hello": Capture(
        harness="gemini",
        exit_code=0,
        session_id="4da9c8bc-d8ca-4ee3-8cf0-901b53e0aeee",
        final_message="Hello from the mock model.",
        failed=False,
        summary="40 input tokens (0 cached), 16 output tokens",
        progress=("session started",),
        usage=_gemini_usage(40, 16, "gemini-3.1-pro-preview"),
    ),
    "gemini-resume-stdin": Capture(
        harness="gemini",
        exit_code=0,
        session_id="3d20dbe1-869c-4aca-8e9c-2dbcabcae5fb",  # gemini-bgtask's, continued
        final_message="MOCK: continuing the resumed session.",
        failed=False,
        summary="40 input tokens (0 cached), 16 output tokens",
        progress=("session started",),
        usage=_gemini_usage(40, 16, "gemini-3.8-flash"),
    ),
    "gemini-resume-unknown": Capture(
        harness="gemini",
        exit_code=42,
        session_id=None,  # stdout is empty; stderr says "Error resuming session: …"
        final_message=None,
        failed=True,
        summary=None,
        progress=(),
        failure=ResumeTargetMissing,
        stream_tells=False,
    ),
    "gemini-sigTERM-group": Capture(
        harness="gemini",
        exit_code=0,  # SIGTERM: Gemini exits 0, with no result
        session_id="d01708f5-7ecd-4703-add6-bba41f2fec7d",
        final_message=None,
        failed=True,
        summary=None,
        progress=("session started", "$ echo long-start; sleep 317; echo long-done"),
        error="gemini exited 0 without a result: its turn was interrupted",
        failure=SessionFailed,
    ),
    # Qwen Code: Claude's shape; a 401 is an error_during_execution result, exit 1.
    "qwen-api-401": Capture(
        harness="qwen",
        exit_code=1,
        session_id="939da518-89e0-4bd3-a264-81c46e76a802",
        final_message=None,
        failed=True,
        summary="1 turn, 0 input tokens (0 cached), 0 output tokens",
        progress=("session started",),
        error="[API Error: 401 mock: Incorrect API key provided]",
        usage=_qwen_usage(1, 0, 0),
        failure=AuthFailed,  # [API Error: 401 …]
    ),
    "qwen-bgtask": Capture(
        harness="qwen",
        exit_code=0,
        session_id="c731bf94-e9ac-4802-8e58-06ee9c6f962d",
        final_message=_QWEN_BG,
        failed=False,
        summary="2 turns, 40 input tokens (0 cached), 16 output tokens",
        progress=("session started", "$ sleep 317"),
        usage=_qwen_usage(2, 40, 16),
        # Qwen killed the shell at exit; only its status file says "cancelled"
    ),
    "qwen-fg": Capture(
        harness="qwen",
        exit_code=0,
        session_id="619372de-0cab-438a-aa81-b5c686d6d144",
        final_message=(
            'MOCK-FINAL: tool finished; result was "Command: echo hi-from-tool\\nDirectory: '
            "(root)\\nOutput: hi-from-tool\\nError: (none)\\nExit Code: 0\\nSignal: (none)\\n"
            'Process Group PGID: (none)"'
        ),
        failed=False,
        summary="2 turns, 40 input tokens (0 cached), 16 output tokens",
        progress=("session started", "$ echo hi-from-tool"),
        usage=_qwen_usage(2, 40, 16),
    ),
    "qwen-hello": Capture(
        harness="qwen",
        exit_code=0,
        session_id="b59fc560-0f01-4a77-bc4e-6a0c12a5b412",
        final_message="Hello from the mock model.",
        failed=False,
        summary="1 turn, 40 input tokens (0 cached), 16 output tokens",
        progress=("session started",),
        usage=_qwen_usage(1, 40, 16),
    ),
    "qwen-resume-stdin": Capture(
        harness="qwen",
        exit_code=0,
        session_id="c731bf94-e9ac-4802-8e58-06ee9c6f962d",  # qwen-bgtask's, continued
        final_message="MOCK: continuing the resumed session.",
        failed=False,
        summary="1 turn, 80 input tokens (0 cached), 32 output tokens",
        progress=("session started",),
        usage=_qwen_usage(1, 80, 32),  # the whole history was sent again
    ),
    "qwen-resume-unknown": Capture(
        harness="qwen",
        exit_code=1,
        session_id=None,  # stdout is empty; stderr says 'No saved session found with title …'
        final_message=None,
        failed=True,
        summary=None,
        progress=(),
        failure=ResumeTargetMissing,
        stream_tells=False,
    ),
    "qwen-sigINT-group": Capture(
        harness="qwen",
        exit_code=None,  # died by SIGINT; the tool was cancelled, with no result
        session_id="258141ee-4c03-46b1-ad28-5fdfbf887398",
        final_message=None,
        failed=True,
        summary=None,
        progress=("session started", "$ echo long-start; sleep 317; echo long-done"),
        failure=SessionFailed,
    ),
}


def capture_names() -> list[str]:
    """The captures of the three CLIs in tests/transcripts, by their folder names."""
    return sorted(
        path.name
        for path in TRANSCRIPTS.iterdir()
        if path.is_dir() and path.name.split("-")[0] in READERS
    )


def exit_code_of(name: str) -> int | None:
    """The capture's exit code as ``finish`` is told it: None when a signal ended the CLI."""
    rc = meta_of(name)["rc"]
    assert isinstance(rc, int)
    return rc if rc >= 0 else None
