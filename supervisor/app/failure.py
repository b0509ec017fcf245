"""How a command ends on an error: one line on stderr that names it and its fix, and a non-zero exit.

Every CLI command runs through `run_command`: a typed error (`BridgeError`) is ``ai-bridge: [code] message hint``
(the code has its section in docs/troubleshooting.md), an OS error names its file, anything else says it is a bug
and how to see more. The traceback comes only with ``--debug``. A closed stdout (``ai-bridge ask … | head``) ends
quietly with the status a program killed by SIGPIPE has; Ctrl-C ends with 130.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from ..errors import BridgeError

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program Ctrl-C stopped
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE: what `yes | head` leaves for `yes`


def leaves(exc: BaseException) -> list[BaseException]:
    """The errors inside nested exception groups (an actor's nursery wraps its one real error), in order."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def leaf(exc: BaseException) -> BaseException:
    """The error that says what happened: the first typed one inside the groups, else the first."""
    found = leaves(exc)
    return next((e for e in found if isinstance(e, BridgeError)), found[0])


def one_line(exc: BaseException) -> str:
    """`exc` as the one line a person reads: what happened and what to do (no code prefix)."""
    if isinstance(exc, BridgeError):
        return " ".join(str(exc).split("\n"))
    if isinstance(exc, PermissionError):
        return f"{exc.strerror or exc}: {exc.filename or ''} (pass a --state-dir you can write, or fix permissions)"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}"
    return f"{type(exc).__name__}: {exc}"


def describe(exc: BaseException) -> str:
    """The line a command prints for an error that ended it."""
    if isinstance(exc, BridgeError):
        return f"[{exc.code}] {one_line(exc)}"
    if isinstance(exc, OSError):
        return one_line(exc)
    return (f"internal error: {one_line(exc)} — a bug in ai-bridge; run the command again with --debug for the "
            "traceback, and report it")


def run_command(body: Callable[[], int], *, debug: bool) -> int:
    """Run a command's body and turn whatever ends it into an exit code (see the module docstring)."""
    try:
        code = body()
        sys.stdout.flush()  # a closed pipe shows here at the latest, while we can still end quietly
        return code
    except SystemExit:
        raise
    except BaseException as exc:  # the one place where every error becomes a line and an exit code
        return _ended_by(exc, debug=debug)


def _ended_by(exc: BaseException, *, debug: bool) -> int:
    found = leaves(exc)
    if any(isinstance(e, BrokenPipeError) for e in found):
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    if all(isinstance(e, KeyboardInterrupt) for e in found):
        print("ai-bridge: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"ai-bridge: {describe(leaf(exc))}", file=sys.stderr, flush=True)
    return EXIT_FAILED


def _silence_stdout() -> None:
    """Whatever is still buffered for the closed pipe goes nowhere: no second BrokenPipeError at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no stdout to speak of
        pass
