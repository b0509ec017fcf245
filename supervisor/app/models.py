"""``ai-bridge models``: what each site's pickers offer now, in the site's own names (issue 34).

Each provider page is opened as `doctor --live` opens it; its picker (with its submenus) and its tools menu are
opened, read and closed. Nothing is chosen, typed or sent.
"""

from __future__ import annotations

import json
import sys

from actors.protocol.common import sites_named
from actors.protocol.provider import ProbeReport

from ..config import Config
from . import open_bridge


async def models_main(config: Config, provider: str, timeout_s: float, as_json: bool) -> int:
    from .probe import probe_providers

    providers = list(sites_named(provider))
    async with open_bridge(config) as bridge:
        results = await probe_providers(bridge, providers, timeout_s=timeout_s, choices=True)
    out: dict[str, object] = {}
    failed = 0
    for p, r in results.items():
        if not isinstance(r, ProbeReport):
            failed += 1
            out[p.value] = {"error": r.as_dict()}
            if not as_json:
                print(f"{p.value}: [{r.code}] {r}", file=sys.stderr)
            continue
        if r.offered is None:
            failed += 1
            out[p.value] = {"error": {"code": "login_required", "message": f"not signed in to {p.value}",
                                      "hint": "Sign in in the browser ai-bridge uses, then run again."}}
            if not as_json:
                print(f"{p.value}: not signed in; sign in in the browser ai-bridge uses, then run again",
                      file=sys.stderr)
            continue
        out[p.value] = r.offered.as_json()
        if not as_json:
            print(r.offered.text(p.value))
    if as_json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    elif failed < len(results):
        print("The names are the sites' own: pass them as --model, --effort, --tool (or model / effort / tools).")
    sys.stdout.flush()
    return 1 if failed == len(results) else 0
