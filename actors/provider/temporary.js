// The site's temporary chat (issue 38), in ai-bridge's isolated world: is it on (a `on` selector matches a visible
// element), and with `click`, press the site's own toggle once when it is off. Returns
// {on, toggle: whether a toggle was found}. Light DOM and open shadow roots both.
function temporaryChat(toggleSelectors, onSelectors, click) {
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  }
  const find = (selectors) => {
    for (const s of selectors) {
      for (const root of roots) {
        let el = null;
        try { el = root.querySelector(s); } catch (e) { el = null; }
        if (el && el.getClientRects().length) return el;
      }
    }
    return null;
  };
  // ChatGPT's temporary chat is its URL (what its page shows then is not captured anywhere public).
  const on = () => !!find(onSelectors) || /[?&]temporary-chat=true\b/.test(location.search);
  if (on()) return { on: true, toggle: !!find(toggleSelectors) };
  const toggle = find(toggleSelectors);
  if (click && toggle) toggle.click();
  return { on: on(), toggle: !!toggle };
}
