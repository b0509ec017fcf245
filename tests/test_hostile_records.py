"""Records are data, never trusted (issue 36): job records and console server records that another process left,
and what the CLI prints of them and of pages. A FIFO named like a record, a ``jobs`` folder that is a link, pids of
``10**20`` or ``'²'``: each is set aside or refused with one line, and the CLI and the jobs service go on. What comes
from a page or a record reaches the terminal as text, never as commands (``--raw`` keeps the bytes). Hypothesis over
record contents feeds every consumer of an accepted record."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors import jobs
from actors.job_records import JobFiles, owner_alive, parse
from actors.protocol.common import ProviderName
from actors.protocol.jobs import JobStatus
from actors.protocol.provider import AskResult, AskTimings
from supervisor.app import ask, console_client, jobs_cli
from supervisor.errors import SiteError
from supervisor.safetext import encodable, for_terminal, json_for_terminal

from .test_job_records import FIELDS, T0, _mutate, sample, values

# A page's answer that would take over a terminal: title, clear screen, a forged line, the clipboard (OSC 52), a C1
# CSI, a right-to-left override.
HOSTILE = ("safe\x1b]0;pwned\x07\x1b[2J\x1b[1;1HALL TESTS PASSED\r\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m"
           "invoice\u202efdp.exe\ttab")
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def visible(text: str) -> bool:
    return not any(c in text for c in CONTROLS)


def record_with(tmp_path: Path, job_id: str, **changes: object) -> Path:
    files = JobFiles(tmp_path)
    files.prepare()
    data = sample(job_id).as_json()
    data.update(changes)
    path = tmp_path / "jobs" / f"{job_id}.json"
    path.write_text(json.dumps(data))
    return path


async def in_thread(fn, *args):  # type: ignore[no-untyped-def]
    """A file operation that must not block: a hang fails the test instead of the run."""
    with trio.fail_after(20):
        return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)


# -- job records ------------------------------------------------------------------------------------------------------


async def test_a_fifo_named_like_a_record_blocks_nothing(tmp_path: Path) -> None:
    files = JobFiles(tmp_path)
    files.prepare()
    files.write(sample("job-good0001"))
    os.mkfifo(tmp_path / "jobs" / "job-fifo0001.json")
    got = await in_thread(files.load, 7, T0)
    assert [r.job_id for r in got] == ["job-good0001"]
    assert (tmp_path / "jobs" / "job-fifo0001.json.bad").exists()
    assert await in_thread(files.read, "job-fifo0001") is None
    os.mkfifo(tmp_path / "jobs" / "job-fifo0002.json")
    assert await in_thread(jobs_cli.list_main, tmp_path, 365.0 * 100, False) == 0
    book = jobs.JobBook(tmp_path, clock=lambda: T0)  # the server's start reads the same folder
    assert await book.load() == [] and list(book.jobs) == ["job-good0001"]


def test_a_jobs_folder_that_is_a_link_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "job-zzzz0001.json").write_text("not a record")
    (elsewhere / "notes.json").write_text("mine")
    state = tmp_path / "state"
    state.mkdir()
    os.symlink(elsewhere, state / "jobs")
    assert jobs_cli.list_main(state, 7.0, False) == 2
    assert jobs_cli.get_main(state, "job-zzzz0001", 0, False) == 2
    err = capsys.readouterr().err
    assert "not a plain folder" in err and "Traceback" not in err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["job-zzzz0001.json", "notes.json"]  # nothing renamed


@pytest.mark.parametrize("owner", [f"{10**20}:1", "²:1", "-1:1", "0:1", "99999999999:?", "1e9:1", " 1:1", "1"])
async def test_a_nonsense_pid_crashes_neither_the_cli_nor_the_jobs_service(tmp_path: Path, owner: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    record_with(tmp_path, "job-pid00001", status="running", finishedAt=None, owner=owner)
    record_with(tmp_path, "job-good0001")
    assert jobs_cli.list_main(tmp_path, 365.0 * 100, False) == 0
    assert "job-good0001" in capsys.readouterr().out
    assert jobs_cli.get_main(tmp_path, "job-pid00001", 0, False) in (1, 3)
    assert not owner_alive(owner)
    book = jobs.JobBook(tmp_path, clock=lambda: T0)
    orphans = await book.load()  # the service starts, and the job (if its record stands) is an orphan to reattach
    assert [o.job_id for o in orphans] in ([], ["job-pid00001"]) and "job-good0001" in book.jobs


# -- console server records -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("record", [
    {"pid": 10**20, "socket": "/tmp/x.sock"}, {"pid": "²", "socket": "/tmp/x.sock"}, {"pid": 1.5, "socket": "/x"},
    {"pid": True, "socket": "/x"}, {"pid": 1, "socket": 5}, {"pid": 1, "socket": "relative"}, [], "x",
])
async def test_a_bad_server_record_is_set_aside_and_the_console_goes_on(tmp_path: Path, record: object) -> None:
    folder = tmp_path / "servers"
    folder.mkdir()
    (folder / "1.json").write_text(json.dumps(record))
    os.mkfifo(folder / "2.json")
    (folder / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(), "socket": "/run/me.sock",
                                                            "project": "p\x1b[2J", "startedAt": "now"}))
    got = await in_thread(console_client.running_servers, tmp_path)
    assert [(r.pid, str(r.socket), r.project) for r in got] == [(os.getpid(), "/run/me.sock", "p\\x1b[2J")]
    assert {p.name for p in folder.iterdir()} == {"1.json.bad", "2.json.bad", f"{os.getpid()}.json"}


def test_a_servers_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    os.symlink(tmp_path, tmp_path / "servers")
    with pytest.raises(console_client.ConsoleError, match="not a plain folder"):
        console_client.running_servers(tmp_path)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(record=st.dictionaries(st.sampled_from(["pid", "socket", "project", "startedAt", "x"]), values, max_size=5)
       | values)
def test_any_server_record_is_a_record_or_a_value_error(record: object) -> None:
    try:
        got = console_client.parse_record(json.dumps(record).encode())
    except ValueError:
        return
    assert 0 < got.pid <= console_client.PID_MAX and got.socket.is_absolute()
    assert visible(got.describe())


# -- what the terminal gets -------------------------------------------------------------------------------------------


def test_an_answer_is_shown_not_obeyed(capsys: pytest.CaptureFixture[str]) -> None:
    result = AskResult(ProviderName.CHATGPT, HOSTILE, "https://chatgpt.com/c/1", AskTimings(1, 1, 1, 1, 1, 5), 0, 1.0,
                       "turn")
    failed = SiteError("the page said \x1b]52;c;cHduZWQ=\x07 no")
    results = {ProviderName.CHATGPT: result, ProviderName.GEMINI: failed}
    assert ask.print_results(list(results), results, False) == 0  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert visible(out) and visible(err)
    assert "safe\\x1b]0;pwned\\x07\\x1b[2J" in out and "invoice\\u202efdp.exe\ttab" in out
    assert "\\x1b]52;c;cHduZWQ=\\x07" in err
    ask.print_results(list(results), results, True)  # type: ignore[arg-type]
    shown = capsys.readouterr().out
    assert visible(shown) and json.loads(shown)["chatgpt"]["answer"] == HOSTILE  # JSON: escaped, the same text
    ask.print_results([ProviderName.CHATGPT], results, False, raw=True)  # type: ignore[arg-type]
    assert capsys.readouterr().out == HOSTILE + "\n"  # --raw: the bytes, for piping


def test_jobs_get_shows_a_recorded_answer_and_error_as_text(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    data = sample("job-esc00001").as_json()
    data["tool"] = "ask\x1b[2J"
    data["asks"]["chatgpt"]["result"]["answer"] = HOSTILE
    files = JobFiles(tmp_path)
    files.prepare()
    (tmp_path / "jobs" / "job-esc00001.json").write_text(json.dumps(data))
    assert jobs_cli.get_main(tmp_path, "job-esc00001", 0, False) == 0
    out, err = capsys.readouterr()
    assert visible(out) and visible(err) and "ALL TESTS PASSED" in out and "ask\\x1b[2J" in err
    assert jobs_cli.list_main(tmp_path, 365.0 * 100, False) == 0
    assert visible(capsys.readouterr().out)
    assert jobs_cli.get_main(tmp_path, "job-esc00001", 0, True) == 0
    shown = capsys.readouterr().out
    assert visible(shown) and json.loads(shown)["results"]["chatgpt"]["answer"] == HOSTILE
    assert jobs_cli.get_main(tmp_path, "job-esc00001", 0, False, raw=True) == 0
    assert HOSTILE in capsys.readouterr().out


def test_doctor_and_check_show_page_text_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    from supervisor.app import doctor
    from supervisor.app.check import run

    doctor.report([doctor.Check("browser", False, HOSTILE, fix="reload \x1b[5m")])
    run.say(f"chatgpt: [site_error] {HOSTILE}")
    out, err = capsys.readouterr()
    assert visible(out) and visible(err) and "ALL TESTS PASSED" in out + err


@given(st.text())
@settings(max_examples=200, deadline=None, derandomize=True)
def test_no_text_reaches_the_terminal_as_a_command(text: str) -> None:
    shown = for_terminal(text)
    assert visible(shown) and not any(0xD800 <= ord(c) <= 0xDFFF for c in shown)
    assert shown.count("\n") == text.count("\n")  # lines are kept, none is made
    assert json.loads(json_for_terminal({"t": text})) == {"t": text}


# -- every consumer of an accepted record -----------------------------------------------------------------------------

owners = st.one_of(st.text(max_size=12), st.sampled_from([f"{10**20}:1", "²:1", "0:?", "4194305:1", "1:1"]))


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(field=st.sampled_from([*FIELDS, ["owner"], ["owner"], ["asks", "chatgpt", "url"]]),
       value=values | owners, running=st.booleans())
def test_an_accepted_record_is_safe_for_every_reader(tmp_path_factory: pytest.TempPathFactory, field: list[str],
                                                      value: object, running: bool) -> None:
    base = sample().as_json()
    if running:
        base.update(status="running", finishedAt=None, owner="1:1")
    data = json.dumps(_mutate(base, field, value), default=str).encode()
    try:
        rec = parse(data)
    except ValueError:
        return
    owner_alive(rec.owner)
    jobs_cli._row(rec)
    jobs_cli._full(rec)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        jobs_cli._print(rec, False)
    assert visible(stdout.getvalue()) and visible(stderr.getvalue())
    job = trio.run(_restore, rec)
    assert job.job_id == rec.job_id and job.status in JobStatus


async def _restore(rec):  # type: ignore[no-untyped-def]
    return jobs.Job.restore(rec, T0 + dt.timedelta(days=1))


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.text(st.characters() | st.characters(categories=["Cs"]) | st.characters(codec="ascii"))
                    | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20))
@example({"text": "a page's \ud800 half"})
@example(["\udfff", 1, {"k\ud83d": None}])
def test_a_tool_result_is_always_utf8_and_unchanged_without_lone_surrogates(value: object) -> None:
    """Every tool result passes through `encodable` (the ASCII fast path skips the regex): whatever a page put in it,
    the result encodes as UTF-8, and one with no lone surrogate is left as it was."""
    out = encodable(value)
    json.dumps(out, ensure_ascii=False).encode("utf-8")
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        assert out != value
    else:
        assert out == value
