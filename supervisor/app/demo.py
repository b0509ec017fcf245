"""``ai-bridge demo``: one ask of both providers, end to end, on the imitations of chatgpt.com and gemini.google.com
that ship with ai-bridge (the tests' own fake sites, tests/fakesites; supervisor/paths.py finds them), with no
network, no account and no flags to build.

The run isolates itself without root: a temporary state dir (its own sessions, history, log and pairing key, all
removed at the end); the fake sites on 127.0.0.1 with their shipped certificate; a headless Chromium of its own on a
temporary profile, whose host rules send chatgpt.com and gemini.google.com to the fakes and every other host nowhere,
and which trusts the fakes' certificate by its SPKI pin. Its extension obeys only this run's server, because it is
paired with the run's key: another ai-bridge server on a discovery port shows up in it as unpaired and is left alone,
and the extension of the user's own Chrome (paired with their key) does not obey this run's server.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import attrs
import trio

from ..config import Config
from ..paths import fakesites_path
from .ask import ask_main

PACKAGE = "supervisor._fakesites"  # the name the fake sites load under, packaged or from a checkout
PROJECT = "ai-bridge-demo"

log = logging.getLogger("ai_bridge.demo")


def fakesites(module: str) -> ModuleType:
    """A module of the fake sites (``server``, ``flags``), from the wheel's copy or the checkout's tests/fakesites."""
    if PACKAGE not in sys.modules:
        where = fakesites_path()
        spec = importlib.util.spec_from_file_location(PACKAGE, where / "__init__.py",
                                                      submodule_search_locations=[str(where)])
        if spec is None or spec.loader is None:
            raise ImportError(f"the imitations of the sites are missing from {where}: reinstall ai-bridge")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{module}")


def demo_config(config: Config, state_dir: Path) -> Config:
    """The user's settings for finding a browser (`browser_path`, `channel`, how to load the extension), and the
    demo's own for everything else."""
    return attrs.evolve(config, state_dir=state_dir, browser="launch", headless=True, isolated=True, profile_dir=None,
                        browser_args=(), load_extensions=(), close_browser=False, project=PROJECT,
                        discovery_port=None, use_open_tabs=False, allow_faults=False, private_text=False)


async def demo_main(config: Config, question: str, timeout_s: float) -> int:
    server, flags = fakesites("server"), fakesites("flags")
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(server.serve_sites, tls=server.shipped_certificates(),
                                                     shutdown=shutdown))
        try:
            args = flags.chromium_args({n: info["ports"][n] for n in ("chatgpt", "gemini")}, info["spki"])
            say(f"the imitations of chatgpt.com and gemini.google.com run on 127.0.0.1:{info['chatgptPort']} and "
                f":{info['geminiPort']}; a headless Chromium of ai-bridge's own goes there and nowhere else.")
            say(f"asking both: {question}")
            code = await ask_main(attrs.evolve(config, browser_args=(*args,)), question, "both", True, timeout_s,
                                  False)
        finally:
            shutdown.set()
    if code == 0:
        say("done: that was ai-bridge end to end, on the imitations. For the real sites: `ai-bridge doctor` checks "
            "the set-up, then `ai-bridge ask \"…\"` in a browser where you are signed in to ChatGPT and Gemini "
            "(README.md).")
    return code


def say(text: str) -> None:
    print(f"ai-bridge demo: {text}", file=sys.stderr, flush=True)


def run_demo(config: Config, question: str, timeout_s: float, *, verbose: int) -> int:
    """The command: a temporary state dir for the run, logging to stderr only, the ask, the state dir removed."""
    from .. import logs

    state = Path(tempfile.mkdtemp(prefix="ai-bridge-demo-"))  # 0700, ours
    try:
        logs.setup(config.log_level, None, verbose=verbose)
        return trio.run(demo_main, demo_config(config, state), question, timeout_s)
    finally:
        shutil.rmtree(state, ignore_errors=True)
