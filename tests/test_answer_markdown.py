"""The answer converter (actors/provider/markdown.js) on markup the fakes do not render: older and alternative
layouts of the real sites (ChatGPT's code.language-xxx blocks, CodeMirror line divs, Gemini's div.code-block,
MathJax), tables without a header section or with align attributes, and its promises: the page is left
untouched and no custom-element constructor of the page runs. Loaded into an isolated world of real Chromium
exactly as the provider actor loads it; the fakes and tests/test_e2e_markdown.py cover the sites' current markup.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

import pytest

from actors.provider.tab import MARKDOWN_SOURCE

from . import cdp_pipe
from .cdp_pipe import CHROMIUM
from .conftest import missing_tool
from .shared_chromium import ChromiumPool

pytestmark = [
    pytest.mark.chromium,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=missing_tool(f"Chromium not found at {CHROMIUM}")),
]


class World(cdp_pipe.World):
    async def convert(self, html: str, setup: str = "") -> str:
        """Put `html` in the page (main world), then convert its first element from our world."""
        await self.page.evaluate(f"document.body.innerHTML = {json.dumps(html)}; {setup}")
        out = await self.eval("window.__aibMarkdown(document.body.firstElementChild)")
        assert isinstance(out, str)
        return out


@pytest.fixture
async def world(shared_chromiums: ChromiumPool) -> AsyncIterator[World]:
    # the session's plain Chromium (same flags as open_chromium()), this test's page in a fresh context of it
    async with shared_chromiums.get().browser() as browser:
        w = await World.create(await browser.new_page("about:blank"))
        await w.eval(MARKDOWN_SOURCE)
        yield w


async def test_older_chatgpt_code_block_takes_the_language_class_not_the_chrome(world: World) -> None:
    html = ('<div class="markdown prose"><p>Run:</p><pre class="!overflow-visible"><div class="contain-inline-size">'
            '<div class="flex items-center">python<div><button>Copy code</button><button>Edit</button></div></div>'
            '<div class="overflow-y-auto p-4" dir="ltr"><code class="!whitespace-pre hljs language-python">'
            '<span class="hljs-built_in">print</span>(<span class="hljs-number">1</span>)\n\n\ndone()\n'
            '</code></div></div></pre></div>')
    assert await world.convert(html) == "Run:\n\n```python\nprint(1)\n\n\ndone()\n```"


async def test_codemirror_lines_and_display_names(world: World) -> None:
    html = ('<div><pre><div class="header"><svg aria-hidden="true"></svg>C++<button aria-label="Copy">Copy</button>'
            '</div><div class="cm-editor"><div class="cm-content"><div class="cm-line">int a;</div>'
            '<div class="cm-line"></div><div class="cm-line">return a;</div></div></div></pre></div>')
    assert await world.convert(html) == "```cpp\nint a;\n\nreturn a;\n```"
    gemini_old = ('<div><div class="code-block"><div class="code-block-decoration"><span>Code snippet</span>'
                  '<button><mat-icon>content_copy</mat-icon></button></div><pre><code>x = ```y```</code></pre></div>'
                  '</div>')
    assert await world.convert(gemini_old) == "````\nx = ```y```\n````"


async def test_tables_without_thead_and_with_align_attributes(world: World) -> None:
    html = ('<div><table><tbody><tr><td align="center">a</td><td align="right">b|c</td><td></td></tr>'
            '<tr><td>1<br>2</td><td>3</td><td>4</td></tr></tbody></table></div>')
    assert await world.convert(html) == "| a | b\\|c |  |\n| :---: | ---: | --- |\n| 1<br>2 | 3 | 4 |"


async def test_mathjax_and_mathml(world: World) -> None:
    html = ('<div><p>Inline <mjx-container class="MathJax"><mjx-assistive-mml><math><semantics><mi>x</mi>'
            '<annotation encoding="application/x-tex">x_1</annotation></semantics></math></mjx-assistive-mml>'
            '</mjx-container> and</p><mjx-container display="true"><math display="block" alttext="a+b"><mi>a</mi>'
            '</math></mjx-container></div>')
    assert await world.convert(html) == "Inline $x_1$ and\n\n$$\na+b\n$$"


async def test_links_images_and_text_as_written(world: World) -> None:
    html = ('<div><p><a href="https://a.example/p?q=1&amp;utm_source=chatgpt.com#frag">docs</a>, '
            '<a href="https://a.example/wiki/Foo_(bar)">Foo (bar)</a>, <a href="https://b.example/x y">sp</a>, '
            '<a href="mailto:me@example.com">me@example.com</a>, <a href="https://c.example/">https://c.example/</a>'
            '</p><p><img src="https://i.example/fav.ico" alt=""><img src="https://i.example/chart.png" alt="Chart">'
            '</p><p>2 * 3 = 6, snake_case, [brackets], C:\\dir, # not a heading, 1. not a list</p></div>')
    assert await world.convert(html) == (
        "[docs](https://a.example/p?q=1#frag), [Foo (bar)](https://a.example/wiki/Foo_(bar)), "
        "[sp](<https://b.example/x y>), me@example.com, https://c.example/\n\n"
        "![Chart](https://i.example/chart.png)\n\n"
        "2 * 3 = 6, snake_case, [brackets], C:\\dir, # not a heading, 1. not a list")


async def test_shadow_roots_and_slots_are_read_without_touching_the_page(world: World) -> None:
    setup = """
      window.constructed = 0;
      customElements.define('x-card', class extends HTMLElement {
        constructor() { super(); window.constructed += 1; }
        connectedCallback() {
          if (this.shadowRoot) return;
          this.attachShadow({mode: 'open'}).innerHTML = '<h3>Card</h3><button>Close</button><slot></slot>';
        }
      });
      document.body.firstElementChild.innerHTML = '<x-card><p>Body <b>text</b></p></x-card><ul><li>one</li></ul>';
      window.before = document.body.innerHTML;
    """
    out = await world.convert("<div></div>", setup)
    assert out == "### Card\n\nBody **text**\n\n- one"
    # the page: same markup, and no x-card was constructed by the conversion (only the one in the page)
    assert await world.page.evaluate("[document.body.innerHTML === window.before, window.constructed]") == [True, 1]
