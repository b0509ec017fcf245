"""Shared fixtures. Time-driven logic runs on trio's MockClock; real processes get their own state dir.

Parallel runs: ``addopts`` asks pytest-xdist for workers (``-n auto``; ``pytest_xdist_auto_num_workers`` below says
how many). Each worker runs in a network namespace of its own (tests/netns.py), so that one worker's browsers never
find another worker's servers on the extension's discovery ports. Where no namespace can be made, the run falls back
to one process and says why. ``-n 0`` runs serially on purpose.
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import trio.testing

REPO = Path(__file__).resolve().parent.parent
NETNS_HELPER = Path(__file__).resolve().parent / "netns.py"
_npm_prefetch: threading.Thread | None = None


def auto_workers() -> int:
    """Workers for ``-n auto``: four more than cores. An end-to-end test keeps under half a core busy (a server, a
    browser and a fake site take turns), and some tests mostly wait on timers (see `run_order`), so the cores need
    more workers than themselves. Measured on this 2-core machine, idle, whole suite: 3 workers 9 min 3 s, 4 workers
    7:44 to 8:17, 6 workers 7:15 to 7:38 with the old plan, 7:01 with `run_order`'s. 7 workers were hardly faster
    (7:04) and ran seven end-to-end tests at once often enough that their deadlines met a starved machine (two
    timing failures in the first two tries). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` (or ``-n``) sets another count."""
    return (os.cpu_count() or 1) + 4


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    env = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    return int(env) if env else auto_workers()


def _isolation_problem() -> str | None:
    """Why workers cannot each get a private network namespace here, or None if they can."""
    try:
        done = subprocess.run([sys.executable, str(NETNS_HELPER), "--check"], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]


def keep_bytecode() -> None:
    """Under PYTHONDONTWRITEBYTECODE (some CI images set it) each of the run's ~400 Python processes, servers and
    CLIs, would compile our sources anew (0.17 CPU-s of a server's start), and each worker would rewrite the test
    modules' asserts anew. The run writes bytecode as Python does by default, into the git-ignored __pycache__
    folders (the standard library and the venv have theirs already). The workers and every process the tests start
    inherit this."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    keep_bytecode()
    tx = getattr(config.option, "tx", None)
    if hasattr(config, "workerinput") or not tx or config.getoption("dist", "no") == "no":
        return
    if config.getoption("collectonly"):
        return
    if any(spec != "popen" for spec in tx):  # the caller's own --tx: theirs to isolate
        return
    problem = _isolation_problem()
    if problem is not None:
        config.option.tx, config.option.dist, config.option.numprocesses = [], "no", 0
        sys.stderr.write(f"tests run in one process: parallel workers need a network namespace each (the extension "
                         f"connects to every server on ports 8766-8775), and none can be made here: {problem}\n")
        return
    python = shlex.join([sys.executable, str(NETNS_HELPER)])
    config.option.tx = [f"popen//python={python}"] * len(tx)
    config.stash[_GROUPS_DIR] = tempfile.mkdtemp(prefix="ai-bridge-groups-")
    warm_bytecode(config)


def warm_bytecode(config: pytest.Config) -> None:
    """Compile our sources, and rewrite the test modules' asserts, once here in the controller before the workers
    start: in a fresh clone every worker would otherwise do both at the same moment (measured: a worker's collection
    takes 5.4 CPU-s in a fresh clone, 2.8 with the bytecode there). An optimisation only: any failure leaves the
    work to the workers, as before."""
    import compileall
    import re

    for folder in ("actors", "supervisor", "tests"):  # test modules: pytest's own pyc, below
        compileall.compile_dir(REPO / folder, quiet=2, rx=re.compile(r"/test_[^/]*\.py$"))
    try:
        from _pytest.assertion import rewrite  # pytest's own rewriting, as its import hook does it

        state = config.stash[rewrite.assertstate_key]
        for fn in sorted((REPO / "tests").glob("test_*.py")):
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is None:
                source_hash, co = rewrite._rewrite_test(fn, config)
                rewrite._write_pyc(state, co, source_hash, pyc)
    except Exception as exc:  # a pytest whose internals differ: the workers rewrite, as usual
        sys.stderr.write(f"(test modules not rewritten ahead: {exc!r})\n")


# A skip because the machine lacks a tool the tests need (Chromium, node, npm and its registry) says so with this
# prefix. In CI (CI=true) such a skip fails its test instead: a runner without Chromium would otherwise pass green
# with ~280 tests unrun, one without node with the extension's unit tests unrun.
MISSING_TOOL = "missing tool: "


def missing_tool(what: str) -> str:
    """The reason of a skip for a missing tool (see `MISSING_TOOL`)."""
    return MISSING_TOOL + what


requires_node = pytest.mark.skipif(shutil.which("node") is None,
                                   reason=missing_tool("node is not installed (apt-get install -y nodejs)"))


def run_extension_js(folder: Path, modules: tuple[str, ...], script: str, *, timeout_s: float = 60) -> str:
    """`script` run by node as an ES module beside copies of the extension's `modules` (pure ones, without
    chrome.*: they import each other as './name.js'); its stdout."""
    (folder / "package.json").write_text('{"type": "module"}')
    for name in modules:
        (folder / name).write_text((REPO / "extension" / name).read_text())
    (folder / "run.js").write_text(script)
    return subprocess.run(["node", str(folder / "run.js")], capture_output=True, text=True, check=True,
                          timeout=timeout_s).stdout


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing_tool_fails_in_ci(report: pytest.TestReport) -> None:
    if report.skipped and in_ci() and isinstance(report.longrepr, tuple) and MISSING_TOOL in report.longrepr[2]:
        report.outcome = "failed"
        report.longrepr = (f"CI=true: {report.longrepr[2].split(MISSING_TOOL, 1)[1]}. In CI a missing tool fails "
                           "the tests that need it instead of skipping them (.ci/run installs what they need)")


NPM_TESTS = "tests/test_third_party_clients.py"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """The workers' namespaces have no way to the npm registry: when the run has tests that need the npm clients, the
    controller fetches them, starting before any test is handed out (a test that needs them waits for the fetch under
    the install lock). A run without those tests, such as the quick path, fetches nothing."""
    global _npm_prefetch
    tx = getattr(node.config.option, "tx", None) or []
    if _npm_prefetch is None and any(str(NETNS_HELPER) in spec for spec in tx) and \
            any(i.startswith(NPM_TESTS) for i in ids):
        from .npm_clients import prefetch

        _npm_prefetch = prefetch()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _npm_prefetch
    if _GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[_GROUPS_DIR], ignore_errors=True)
    if _npm_prefetch is not None:
        _npm_prefetch.join()
        _npm_prefetch = None


def pytest_report_header(config: pytest.Config) -> str | None:
    tx = getattr(config.option, "tx", None)
    if tx and any(str(NETNS_HELPER) in spec for spec in tx):
        return f"workers: {len(tx)}, each in a network namespace of its own (tests/netns.py)"
    return None


# The quick path (README): `-m "not chromium and not process"`. These start real processes — the server, a browser,
# pip — and take seconds each; the chromium ones carry their own marker. A file here marks all its tests.
PROCESS_TESTS = (
    "test_console.py", "test_hardening.py", "test_mcp_protocol.py", "test_packaging.py", "test_serve_process.py",
    "test_third_party_clients.py", "test_cli_errors.py",
    "test_browser_launch.py::test_extension_loaded_over_the_debugging_pipe",
    "test_browser_launch.py::test_only_a_headed_browser_outlives_a_killed_server",
    "test_browser_launch.py::test_browser_log_is_never_written_through_a_symlink",
    "test_check_judge.py::test_cli_",
    "test_fuzz.py::test_no_stdin_line_goes_unanswered_or_ends_the_server",
    "test_fuzz.py::test_an_oversized_line_is_refused_without_buffering_it",
    "test_hostile_files.py::test_the_server_survives_hostile_names_and_arguments",
    "test_provider_overrides.py::test_an_invalid_file_stops_the_start_with_one_line_per_problem",
    "test_session_store.py::test_two_processes_share_one_state_dir_without_corruption",
    "test_session_store.py::test_kill_9_during_writes_never_leaves_a_torn_file",
)


DURATIONS_KEY = "ai_bridge/durations"
CPU_KEY = "ai_bridge/cpu"
# Durations and CPU of a full run on a 2-core machine with 6 workers (tests of 2 s or more), for a fresh clone that
# has no cache yet; refreshed by hand with `python -m tests.durations` now and then. A hint for the order only.
SHIPPED_DURATIONS = Path(__file__).resolve().parent / "durations.json"
# The CPU a test's own figures miss: the fake sites' process, each worker's start, browser children that others
# reap. Measured over a whole run: the tests' figures add up to 624 of the ~900 CPU-seconds the run used.
UNCOUNTED_CPU = 1.45
# A guess, by kind, for a test this checkout has no figures for: (wall seconds, share of a core it keeps busy).
GUESS = {"slow": (30.0, 0.1), "chromium": (5.0, 0.4), "process": (2.0, 0.5), "": (0.05, 1.0)}
# Below this many free cores the plan counts them as busy and simply sends the longest test left.
SPARE_CORES = 0.3
# A test that fills a gap of free cores must keep at least this share of one busy (or the gap's size, if smaller).
FILL_SHARE = 0.5


# The tests that share a server and browser (the ``shared_bridge`` fixtures, tests/shared_bridge.py) go out in
# groups: all of a group to one worker, one after another (`GroupScheduling`), so a group costs one bridge start. A
# group holds tests of one server setting (their ``bridge_env`` and ``bridge_flags`` marks) up to about this many
# planned seconds.
SHARED_GROUP_S = 100.0
# What a group's bridge start adds: (wall seconds, CPU seconds) of a server and its Chromium (measured, 2 cores).
SHARED_START = (3.0, 2.0)
GROUPS_FILE = "ai_bridge_groups_file"  # workerinput key: where a worker writes the groups for the controller
_GROUPS_DIR = pytest.StashKey[str]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = item.nodeid.removeprefix("tests/")
        if name.startswith(PROCESS_TESTS):
            item.add_marker(pytest.mark.process)
    known = known_costs(config)
    groups = shared_groups(items, known)
    items[:] = run_order(items, known, workers(), groups)
    path = getattr(config, "workerinput", {}).get(GROUPS_FILE)
    if path:  # every worker plans the same: the last to write leaves the same file
        tmp = f"{path}.{os.getpid()}"
        Path(tmp).write_text(json.dumps({i.nodeid: groups[id(i)] for i in items if id(i) in groups}))
        os.replace(tmp, path)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """The controller tells each worker where to write the groups it planned (the controller collects nothing)."""
    node.workerinput[GROUPS_FILE] = str(Path(node.config.stash[_GROUPS_DIR]) / "groups.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist load`` (addopts) with the shared-bridge groups: `GroupScheduling`."""
    if config.getvalue("dist") != "load" or _GROUPS_DIR not in config.stash:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """xdist's loadscope, its scopes our groups: a group goes to one worker whole; every other test is a scope
        of its own. Units go out in the planned order (`run_order`), not reordered by size. (xdist's own loadgroup
        names a group in the test's id, which pytest 9 no longer lets it change: its groups were split.)"""

        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            config.option.loadscopereorder = False
            self.groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                try:
                    self.groups = json.loads((Path(config.stash[_GROUPS_DIR]) / "groups.json").read_text())
                except (OSError, ValueError):
                    self.groups = {}
            return self.groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


SHARING_FIXTURES = ("shared_bridge", "shared_tools_bridge")


def bridge_setting(item: pytest.Item) -> str | None:
    """The server setting a test's shared bridge runs with (which sites, its ``bridge_env`` and ``bridge_flags``
    marks), None if it shares none."""
    fixture = next((f for f in SHARING_FIXTURES if f in getattr(item, "fixturenames", ())), None)
    if fixture is None:
        return None
    env = item.get_closest_marker("bridge_env")
    flags = item.get_closest_marker("bridge_flags")
    return "|".join((fixture, ",".join(f"{k}={v}" for k, v in sorted(env.kwargs.items())) if env else "",
                     " ".join(flags.args) if flags else ""))


def shared_groups(items: list[pytest.Item], known: dict[str, tuple[float, float | None]]) -> dict[int, str]:
    """Each sharing test's group (by id(item)): per setting, as many groups as its planned time needs, dealt longest
    first to the group with the least so far. Every worker computes the same (xdist checks the collections agree)."""
    by_setting: dict[str, list[pytest.Item]] = {}
    for item in items:
        setting = bridge_setting(item)
        if setting is not None:
            by_setting.setdefault(setting, []).append(item)
    groups: dict[int, str] = {}
    for n, (_setting, members) in enumerate(sorted(by_setting.items())):
        walls = {id(i): planned_cost(i, known)[0] for i in members}
        planned = [0.0] * max(1, math.ceil(sum(walls.values()) / SHARED_GROUP_S))
        for item in sorted(members, key=lambda i: -walls[id(i)]):
            g = planned.index(min(planned))
            planned[g] += walls[id(item)]
            groups[id(item)] = f"shared-bridge-{n}-{g}"
    return groups


def known_costs(config: pytest.Config) -> dict[str, tuple[float, float | None]]:
    """Each test's last wall time and CPU (None: not known) where this checkout has them (pytest's cache), else the
    shipped ones. Every worker reads the same files, so all collect the same order, as xdist requires."""
    known: dict[str, tuple[float, float | None]] = {}
    try:
        for k, v in json.loads(SHIPPED_DURATIONS.read_text()).items():
            known[k] = (float(v[0]), float(v[1])) if isinstance(v, list) else (float(v), None)
    except (OSError, ValueError, TypeError, IndexError):
        pass
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    if cache is not None:
        cpu = cache.get(CPU_KEY, {})
        for k, d in cache.get(DURATIONS_KEY, {}).items():
            known[k] = (d, cpu.get(k, known.get(k, (0.0, None))[1]))
    return known


def workers() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def planned_cost(item: pytest.Item, known: dict[str, tuple[float, float | None]]) -> tuple[float, float]:
    """(wall seconds, share of a core kept busy) the plan counts on for a test: its figures, else a guess by kind."""
    got = known.get(item.nodeid)
    if got is not None and got[0] > 0 and got[1] is not None:
        return got[0], min(1.0, UNCOUNTED_CPU * got[1] / got[0])
    marks = {m.name for m in item.iter_markers()}
    wall, share = next(GUESS[k] for k in ("slow", "chromium", "process", "") if not k or k in marks)
    return (got[0] if got is not None and got[0] > 0 else wall), share


def run_order(items: list[pytest.Item], known: dict[str, tuple[float, float | None]], n: int,
              groups: dict[int, str] | None = None) -> list[pytest.Item]:
    """The order xdist hands tests out in (one at a time, to the first free worker), planned by simulating the run
    on the cores: each test keeps a share of a core busy (its CPU over its wall time) while it runs, and when the
    running tests ask for more than the cores have, all of them slow down alike. Longest first, so that no worker
    ends the run alone with a long test; but while the running tests leave cores free (long tests that mostly wait
    on a timer: a browser's 30 s idle, a server's deadline), the next one is the longest that keeps enough of a core
    busy to fill the gap, so the cores never idle behind the waits. Measured: SPARE_CORES/FILL_SHARE in a model of a
    whole run (each test's wall time and CPU in a real run, where the old plan took 451 s and the model says 452 s),
    this plan ends at 438 s on 6 workers. A group (`shared_groups`: tests one worker runs in a row on one shared
    bridge) is planned as one test: their wall times and CPU added up, with the bridge's start."""
    cores = os.cpu_count() or 1

    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault((groups or {}).get(id(item)) or f"single {id(item)}", []).append(item)
    cost: dict[str, tuple[float, float]] = {}
    for name, members in units.items():
        if len(members) == 1 and name.startswith("single "):
            cost[name] = planned_cost(members[0], known)
            continue
        parts = [planned_cost(i, known) for i in members]
        wall = SHARED_START[0] + sum(w for w, _ in parts)
        cost[name] = wall, min(1.0, (UNCOUNTED_CPU * SHARED_START[1] + sum(w * s for w, s in parts)) / wall)
    left = sorted(units, key=lambda u: -cost[u][0])
    order: list[pytest.Item] = []
    running: list[list[float]] = []  # [wall time left, share]; all slow down alike when the cores are short,
    while left:                       # which changes when the run ends, not which test ends first
        while left and len(running) < max(1, n):
            spare = cores - sum(share for _, share in running)
            if spare <= SPARE_CORES:
                unit = left[0]
            else:
                need = min(spare, FILL_SHARE)
                unit = next((u for u in left if cost[u][1] >= need), None) or max(left, key=lambda u: cost[u][1])
            left.remove(unit)
            order += units[unit]
            running.append(list(cost[unit]))
        step = min(wall for wall, _ in running)
        for r in running:
            r[0] -= step
        running = [r for r in running if r[0] > 1e-9]
    return order


_durations: dict[str, float] = {}
_cpu: dict[str, float] = {}
_CPU_START = pytest.StashKey[float]()


def cpu_seconds() -> float:
    """CPU this process and its reaped children used so far. A test's servers and browsers are its process's
    children (a browser is the server's, reaped by it), so the difference over a test is what it cost the cores.
    The shared bridges' processes live on after the tests that used them: what they used so far is counted too."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    shared = sys.modules.get(f"{__package__}.shared_bridge")
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + (shared.live_cpu() if shared else 0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    if call.when == "setup":
        item.stash[_CPU_START] = cpu_seconds()
    report = yield
    missing_tool_fails_in_ci(report)
    if call.when == "teardown" and _CPU_START in item.stash:
        report.user_properties.append(("cpu_s", round(cpu_seconds() - item.stash[_CPU_START], 2)))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration  # setup, call and teardown
    for key, value in report.user_properties:
        if key == "cpu_s" and isinstance(value, int | float):
            _cpu[report.nodeid] = float(value)


def pytest_sessionfinish(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)
    if hasattr(session.config, "workerinput") or cache is None or not _durations:
        return
    for key, new in ((DURATIONS_KEY, _durations), (CPU_KEY, _cpu)):
        known = cache.get(key, {})
        known.update(new)
        cache.set(key, known)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The servers and tools this run starts keep their caches (the tool schemas) in the run's temporary folder,
    not in the user's ~/.cache: one cold start per worker, then warm ones, as a user's would be."""
    d = tmp_path_factory.getbasetemp() / "xdg-cache"
    d.mkdir(exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(d)
    return d


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def find_actor(status: dict[str, Any], actor_id: str) -> dict[str, Any]:
    """An actor's entry, at any depth, in bridge_status's actor tree."""
    def walk(node: dict[str, Any]) -> dict[str, Any] | None:
        for c in node.get("children", []):
            if c["id"] == actor_id:
                return c  # type: ignore[no-any-return]
            if (found := walk(c)) is not None:
                return found
        return None

    found = walk(status["actors"])
    assert found is not None, f"no actor {actor_id!r} in {status['actors']}"
    return found


def process_alive(pid: int) -> bool:
    """Is `pid` a live process? A zombie counts as gone (its parent has not reaped it yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def serve_command() -> list[str]:
    """How tests start the real server: the installed console script's module, with this interpreter."""
    return [sys.executable, "-m", "supervisor.app.cli"]


@pytest.fixture
def server_env(state_dir: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_BRIDGE_")}
    env.update({
        "AI_BRIDGE_STATE_DIR": str(state_dir),
        "AI_BRIDGE_TOOLS": "all",  # every tool listed, as most tests call them; test_tool_sets.py tests the default
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONUNBUFFERED": "1",
    })
    return env


@pytest.fixture(scope="session")
def fakesites_session():  # type: ignore[no-untyped-def]
    from .fakesites.fixture import start_fakesites

    sites = start_fakesites()
    try:
        yield sites
    finally:
        sites.close()


@pytest.fixture(scope="session")
def toolsite_session():  # type: ignore[no-untyped-def]
    from .toolsite.fixture import start_toolsite

    site = start_toolsite()
    try:
        yield site
    finally:
        site.close()


@pytest.fixture
def toolsite(toolsite_session):  # type: ignore[no-untyped-def]
    """The browser tools' local test site (tests/toolsite), reset for each test."""
    toolsite_session.reset()
    return toolsite_session


@pytest.fixture(scope="session")
def shared_chromiums():  # type: ignore[no-untyped-def]
    """Headless Chromiums kept for the whole session (one per set of flags), so a test that needs a plain browser
    does not pay for a start: ``async with shared_chromiums.get(args).browser() as b`` gives a fresh browser
    context, closed with its pages after the test (tests/shared_chromium.py)."""
    from .shared_chromium import ChromiumPool

    pool = ChromiumPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def sites(fakesites_session):  # type: ignore[no-untyped-def]
    """The fake sites (ChatGPT, Gemini, Claude, Grok, Perplexity), reset for each test."""
    fakesites_session.reset()
    return fakesites_session


@pytest.fixture(scope="session")
def shared_bridge_pool(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """This worker's shared servers and browsers (tests/shared_bridge.py)."""
    from .shared_bridge import SharedBridges, pools

    pool = SharedBridges(lambda: tmp_path_factory.mktemp("shared-bridge"))
    pools().append(pool)
    try:
        yield pool
    finally:
        pool.close()
        pools().remove(pool)


@pytest.fixture
def shared_bridge(shared_bridge_pool, sites, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """``async with shared_bridge() as b``: a real server and browser lent to this test (a `Lease`: `Bridge`'s
    interface, with a project of its own and none of the tabs, history or log of earlier tests). The server's
    environment comes from the test's ``bridge_env`` mark (``@pytest.mark.bridge_env(AI_BRIDGE_STALL_S="2")``), so
    that the run order can group the tests of one setting (`shared_groups`)."""
    return lend(shared_bridge_pool, sites, request)


@pytest.fixture
def shared_tools_bridge(shared_bridge_pool, toolsite, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """`shared_bridge` for the browser tools' tests: its browser reaches the tool site (tests/toolsite), and the
    server's flags come from the test's ``bridge_flags`` mark (``@pytest.mark.bridge_flags("--enable-mutations")``)."""
    from .toolsite.fixture import Browsed

    return lend(shared_bridge_pool, Browsed(toolsite), request)


def lend(pool: Any, sites: Any, request: pytest.FixtureRequest) -> Any:
    env = request.node.get_closest_marker("bridge_env")
    flags = request.node.get_closest_marker("bridge_flags")
    return functools.partial(pool.lease, sites, env=dict(env.kwargs) if env else {},
                             extra=tuple(flags.args) if flags else ())


@pytest.fixture(autouse=True)
def alone_in_the_namespace(request: pytest.FixtureRequest) -> None:
    """A test that does not use the shared bridges has the worker's network namespace to itself, as every test had
    before there were any: idle shared servers would sit on its discovery ports, and their browsers' extensions
    would poll its servers. The run order puts the tests that share one after another (`run_order`)."""
    module = sys.modules.get(f"{__package__}.shared_bridge")  # not imported: no pool, nothing to stop
    if module is not None and not any(f in request.fixturenames for f in SHARING_FIXTURES):
        for pool in module.pools():
            pool.close()
