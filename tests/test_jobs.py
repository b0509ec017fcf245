"""The jobs actor against fake provider actors, on an autojump clock: waits, partial text, cancellation, limits,
retention, and what a crash of the jobs actor does to the job table."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from actors import jobs
from actors.protocol.common import ProviderName
from actors.protocol.jobs import JOBS, CancelJob, GetJob, JobView, ListJobs, StartJob
from actors.protocol.provider import Ask, AskPhase, AskProgress, AskResult, AskTimings, ProviderRequest
from supervisor.errors import BridgeError, InvalidArgument, JobNotFound, RateLimited
from supervisor.otp import ActorContext, ActorSystem, Envelope, Registry, Strategy, SupervisorSpec, child
from supervisor.otp.faults import FaultKind, inject

NO_TIMINGS = AskTimings(0, 0, 0, 0, 0, 0)


def Runtime() -> ActorSystem:
    return ActorSystem(registry=Registry(faults_allowed=True))


class FakeSite:
    """What a fake provider does with the next asks: answer after `seconds`, streaming words, or fail."""

    def __init__(self, seconds: float = 10.0, fail: BridgeError | None = None) -> None:
        self.seconds = seconds
        self.fail = fail
        self.asked: list[Ask] = []
        self.cancelled = 0


async def fake_provider(ctx: ActorContext[ProviderRequest], *, site: FakeSite,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    name = ProviderName(ctx.name)
    async with trio.open_nursery() as nursery:

        async def answer(env: Envelope[ProviderRequest]) -> None:
            msg = env.message
            assert isinstance(msg, Ask)
            site.asked.append(msg)
            with trio.CancelScope() as scope:

                async def watch() -> None:
                    await env.wait_abandoned()
                    scope.cancel()

                async with trio.open_nursery() as inner:
                    inner.start_soon(watch)
                    text = ""
                    for i in range(int(site.seconds)):
                        await trio.sleep(1)
                        text += f"word{i} "
                        env.progress(AskProgress(name, AskPhase.ANSWERING, len(text), text))
                    if site.fail is not None:
                        env.fail(site.fail)
                    else:
                        env.reply(msg.reply(AskResult(name, text.strip(), f"https://{ctx.name}/c/1", NO_TIMINGS, 0,
                                                      0.0)))
                    inner.cancel_scope.cancel()
            if scope.cancelled_caught:
                site.cancelled += 1
                env.fail(BridgeError("cancelled"))

        async for env in ctx.messages():
            nursery.start_soon(answer, env)
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def system(**sites: FakeSite) -> AsyncIterator[tuple[ActorSystem, jobs.JobBook]]:
    runtime = Runtime()
    book = jobs.JobBook()
    spec = SupervisorSpec("root", (
        *(child(name, fake_provider, site=site) for name, site in sites.items()),
        child("jobs", jobs.run, book=book),
    ), strategy=Strategy.ONE_FOR_ONE)
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(runtime.run, spec)
        yield runtime, book
        sup.shutdown()


async def start(runtime: ActorSystem, *providers: str, question: str = "q?") -> JobView:
    return await runtime.registry.ref(JOBS).call(
        StartJob("ask", tuple(ProviderName(p) for p in providers), Ask(question, "proj", timeout_s=60)), timeout=5)


async def get(runtime: ActorSystem, job_id: str, wait_s: float = 0.0) -> JobView:
    return await runtime.registry.ref(JOBS).call(GetJob(job_id, wait_s), timeout=wait_s + 5)


async def test_wait_partial_then_final(autojump_clock: trio.testing.MockClock) -> None:
    site = FakeSite(seconds=10)
    async with system(chatgpt=site) as (runtime, _book):
        t0 = trio.current_time()
        view = await start(runtime, "chatgpt")
        assert view.status == "running" and trio.current_time() == t0  # returns at once
        partial = await get(runtime, view.job_id, wait_s=3.5)
        assert trio.current_time() - t0 == pytest.approx(3.5)  # waited exactly wait_s
        assert partial.status == "running" and partial.partial["chatgpt"] == "word0 word1 word2 "
        assert partial.phase == {"chatgpt": "answering"}
        final = await get(runtime, view.job_id, wait_s=60)
        assert trio.current_time() - t0 == pytest.approx(10)  # woke as soon as it finished, not at wait_s
        assert final.status == "done" and final.results["chatgpt"].answer.startswith("word0 word1")
        assert final.partial == {} and final.finished_at is not None and final.elapsed_s == pytest.approx(10)
        assert site.asked[0].ask_id == f"{view.job_id}-chatgpt"  # idempotent history entries per job and provider


async def test_errors_one_of_two_and_unknown_ids(autojump_clock: trio.testing.MockClock) -> None:
    ok, bad = FakeSite(seconds=2), FakeSite(seconds=1, fail=RateLimited("slow down", hint="wait"))
    async with system(chatgpt=bad, gemini=ok) as (runtime, _book):
        one = await start(runtime, "chatgpt")
        both = await start(runtime, "chatgpt", "gemini")
        failed = await get(runtime, one.job_id, wait_s=30)
        assert failed.status == "failed" and failed.results == {}
        assert failed.errors[ProviderName.CHATGPT].as_dict() == {"code": "rate_limited", "message": "slow down",
                                                                "hint": "wait"}
        mixed = await get(runtime, both.job_id, wait_s=30)
        assert mixed.status == "done" and set(mixed.results) == {"gemini"} and set(mixed.errors) == {"chatgpt"}
        with pytest.raises(JobNotFound, match="job-nope"):
            await get(runtime, "job-nope")
        with pytest.raises(JobNotFound):
            await runtime.registry.ref(JOBS).call(CancelJob("job-nope"), timeout=5)
        with pytest.raises(InvalidArgument, match="at least one provider"):
            await start(runtime)


async def test_cancel_stops_the_provider_ask(autojump_clock: trio.testing.MockClock) -> None:
    site = FakeSite(seconds=100)
    async with system(chatgpt=site) as (runtime, _book):
        view = await start(runtime, "chatgpt")
        await trio.sleep(5)
        cancelled: JobView = await runtime.registry.ref(JOBS).call(CancelJob(view.job_id), timeout=15)
        assert cancelled.status == "cancelled" and cancelled.errors[ProviderName.CHATGPT].code == "cancelled"
        await trio.testing.wait_all_tasks_blocked()
        assert site.cancelled == 1  # the provider saw the abandon (the real one clicks Stop)
        again: JobView = await runtime.registry.ref(JOBS).call(CancelJob(view.job_id), timeout=15)
        assert again.status == "cancelled"  # cancelling a finished job just reports it


async def test_limits_and_retention(autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "MAX_RUNNING", 3)
    monkeypatch.setattr(jobs, "KEEP_FINISHED", 2)
    site = FakeSite(seconds=5)
    async with system(chatgpt=site) as (runtime, book):
        ids = [(await start(runtime, "chatgpt")).job_id for _ in range(3)]
        with pytest.raises(InvalidArgument, match="3 background jobs are already running"):
            await start(runtime, "chatgpt")
        for job_id in ids:
            assert (await get(runtime, job_id, wait_s=30)).status == "done"
        newer = await start(runtime, "chatgpt")  # adding prunes the oldest finished beyond KEEP_FINISHED
        listed: tuple[JobView, ...] = await runtime.registry.ref(JOBS).call(ListJobs(limit=10), timeout=5)
        assert [v.job_id for v in listed] == [newer.job_id, ids[2], ids[1]]  # running first, then newest finished
        assert ids[0] not in book.jobs


async def test_a_crash_of_the_jobs_actor_keeps_the_table(autojump_clock: trio.testing.MockClock) -> None:
    site = FakeSite(seconds=3)
    async with system(chatgpt=site) as (runtime, book):
        done = await start(runtime, "chatgpt")
        assert (await get(runtime, done.job_id, wait_s=30)).status == "done"
        site.seconds = 100
        running = await start(runtime, "chatgpt")
        await trio.sleep(2)
        inject(runtime.registry, "jobs", FaultKind.CRASH)
        # The next message crashes the actor; it is re-delivered to the restarted one, which still knows both jobs.
        after = await get(runtime, running.job_id)
        assert after.status == "failed" and after.errors[ProviderName.CHATGPT].code == "actor_crashed"
        assert (await get(runtime, done.job_id)).status == "done"
        await trio.testing.wait_all_tasks_blocked()
        assert site.cancelled == 1  # the interrupted ask was stopped, not left running in the provider
        assert set(book.jobs) == {done.job_id, running.job_id}
