"""An ask survives the site's next redesign (issue 37), as a property: the fakes apply one redesign at a time
(PageOptions.mutation, tests/fakesites/common/drift.js: renamed ids and classes, reworded labels, renamed or unnamed
icons, extra wrappers, a split answer, a replaced editor, renamed turn elements, a dialog on load), each still a page
a person could use. For every example, an ask through the real stack (server, extension, Chromium) returns the whole
answer or a typed error: never a partial or wrong answer as ok, never its question sent twice. An answer that came
through a fallback says so (site_changed).

One server and browser serve every example of a site (tests/shared_bridge.py), one for Claude, Grok and Perplexity
together (issue 40: "the same holds for the new sites as they land"): Hypothesis runs each example in a trio run of
its own. `OUTCOMES` keeps what each kind gave, for docs/providers.md's figures (printed at the end of the run
with -s).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from .cdp_pipe import CHROMIUM
from .conftest import REPO
from .fakesites.fixture import FakeSites, SiteControl
from .fakesites.scripting import MUTATIONS
from .shared_bridge import BridgeThread

pytestmark = [pytest.mark.chromium,
              pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"Chromium not found at {CHROMIUM}")]

KINDS = [k for k in MUTATIONS if k]
# An answer in parts a redesign could drop: a paragraph, a list, a table, a code block, the last line (the order of the
# middle parts is drawn).
PARTS = ("- delta-9 first\n- second item", "| Kind | Value |\n| --- | --- |\n| gamma-3 | 1 |",
         "```python\nprint('omega-42')\n```")
TOKENS = ("alpha-17", "delta-9", "gamma-3", "print('omega-42')", "That is all.")
# What an ask may end in on a page it cannot work with: a typed error that says what it could not find.
TYPED = {"input_rejected", "send_unconfirmed", "no_response", "answer_not_found", "answer_incomplete",
         "response_timeout", "stuck"}
OUTCOMES: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def bridges(fakesites_session: FakeSites, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    started: dict[str, BridgeThread] = {}

    def start(name: str) -> BridgeThread:
        name = name if name in ("chatgpt", "gemini") else "newer-sites"  # the three newer sites share one bridge
        if name not in started:
            started[name] = BridgeThread(fakesites_session, tmp_path_factory.mktemp(f"drift-{name}"))
        return started[name]

    try:
        yield {"sites": fakesites_session, "start": start}
    finally:
        for b in started.values():
            b.close()
        if OUTCOMES:
            print("\ndrift outcomes:", ", ".join(f"{s}/{k}: {o}" for (s, k), o in sorted(OUTCOMES.items())))
            out = REPO / ".test-cache" / f"drift-outcomes-{os.getpid()}.json"
            out.parent.mkdir(exist_ok=True)
            out.write_text(json.dumps({f"{s}/{k}": o for (s, k), o in sorted(OUTCOMES.items())}, indent=1))


def check(site: SiteControl, bridge: BridgeThread, provider: str, kind: str, parts: tuple[str, ...]) -> None:
    site.reset()
    site.control({"page": {"mutation": kind}})
    text = "\n\n".join((f"First part alpha-17 ({kind}): the answer starts here.", *parts, "That is all."))
    site.set_next(text=text, chunks=4, intervalMs=40, firstTokenMs=80)
    question = f"Show the answer format ({kind})."
    res = bridge.call(f"ask_{provider}_web", {"question": question, "new_chat": True, "timeout_s": 45})
    asked = [e for e in site.log() if e["question"] == question]
    assert len(asked) <= 1 and site.full_log()["sends"] <= 1, (kind, "sent twice", site.full_log()["sends"])
    if res.is_error:
        err = res.structured_content["error"]
        assert err["code"] in TYPED, (kind, err)
        OUTCOMES[(provider, kind)] = f"typed error {err['code']}"
        return
    out = res.structured_content
    answer = out["answer"]
    missing = [t for t in TOKENS if t not in answer]
    assert not missing, (kind, "a partial answer as ok", missing, answer)
    # The code stays code (fenced), or the answer says it lost its structure.
    codes = [w["code"] for w in out.get("warnings", [])]
    assert "```" in answer or "plain_text_answer" in codes, (kind, answer)
    assert answer.startswith(f"First part alpha-17 ({kind})"), (kind, "a wrong answer", answer[:200])
    OUTCOMES[(provider, kind)] = "ok" + (" (site_changed)" if "site_changed" in codes else "") + \
        f", {out['completion']['reason']}"
    if "site_changed" in codes:  # reported where a user looks, not only in the result
        status = bridge.call("bridge_status", {}).structured_content
        assert "page changed" in status["siteChanges"][provider], status["siteChanges"]


def every_kind(test: Any) -> Any:
    """Each kind once, as an explicit example, besides the ones drawn."""
    for kind in KINDS:
        test = example(kind=kind, parts=PARTS)(test)
    return test


# The three newer sites are one test (each example asks all three): with one test each, the load scheduler could hand
# them to three workers, each starting a bridge of its own.
@pytest.mark.parametrize("provider", ["chatgpt", "gemini", "claude+grok+perplexity"])
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), parts=st.permutations(PARTS).map(tuple))
@every_kind
def test_an_ask_on_a_redesigned_page_is_whole_or_a_typed_error(bridges: dict[str, Any], provider: str, kind: str,
                                                                parts: tuple[str, ...]) -> None:
    bridge = bridges["start"](provider)
    for site in provider.split("+"):
        check(bridges["sites"].site(site), bridge, site, kind, parts)
