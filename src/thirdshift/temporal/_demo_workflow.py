"""The workflow of ``thirdshift demo --fleet``: claim a host, run one session there.

Sized for a demo: a heartbeat timeout of seconds and retries seconds apart, where production
keeps :func:`~thirdshift.temporal.run_session`'s defaults (30 s, and limits waited out from a
minute). Safe to import in workflow code, as every workflow module must be. No ``from
__future__ import annotations``: the converter reads the run method's types to rebuild its
arguments (a ``SessionRequest``, not a dict), and a type named only as a string may not
resolve in the sandbox.
"""

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

with workflow.unsafe.imports_passed_through():
    from thirdshift.temporal._helpers import claim_host, run_session
    from thirdshift.temporal._values import NON_RETRYABLE_TYPES, SessionRequest, SessionResult

DEMO_WORKFLOW = "thirdshift.demo.Session"
HEARTBEAT_TIMEOUT = timedelta(seconds=10)
RETRY_AFTER = timedelta(seconds=3)
ATTEMPTS = 3


def demo_runner() -> SandboxedWorkflowRunner:
    """The sandbox for a worker running :class:`DemoSession`, with thirdshift passed through.

    The sandbox imports a workflow's module afresh for every run, and with it each module it
    does not pass through: this one lives inside thirdshift, whose package imports the whole
    library (harnesses, the process machinery), about 100 ms of CPU per workflow started
    (profiled in bench/RESULTS.md, "The fleet's cost"), half of what a fleet of 5 s sessions
    cost its process. What a workflow calls of thirdshift keeps no state and reads no clock,
    so passing it through is safe; a workflow of one's own that imports thirdshift inside
    ``imports_passed_through`` (docs/fleet.md) pays nothing of this.
    """
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("thirdshift")
    )


@workflow.defn(name=DEMO_WORKFLOW)
class DemoSession:
    """One session of the demo, on whichever host of the fleet claims it (or on ``host``, a
    host queue already claimed, as a factory sends each later session of a worktree).

    Start it with all three arguments (``host`` ``None`` to claim one): given fewer than the
    run method declares, the converter leaves them untyped, and the request arrives a dict."""

    @workflow.run
    async def run(
        self, fleet: str, request: SessionRequest, host: str | None = None
    ) -> SessionResult:
        if host is None:
            host = await claim_host(fleet)
        return await run_session(
            request,
            task_queue=host,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(
                initial_interval=RETRY_AFTER,
                backoff_coefficient=1.0,
                # A limit whose end the CLI did not say waits no longer than this either.
                maximum_interval=RETRY_AFTER,
                maximum_attempts=ATTEMPTS,
                non_retryable_error_types=list(NON_RETRYABLE_TYPES),
            ),
        )
