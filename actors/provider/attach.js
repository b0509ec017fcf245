// Files (issue 20), run in ai-bridge's isolated world with the table's selectors and labels as values:
//   'input'   -> the composer's file input element (returned as an object, for DOM.setFileInputFiles)
//   'uploads' -> {chips: [{name, busy}], refused: [text]}: the attached files' chips, and refusal notices shown
// Searched in open shadow roots too when `shadow` is set (Gemini's 2025 page).
function aibAttach(op, sel, labels, shadow) {
  const roots = () => {
    const out = [document];
    if (!shadow) return out;
    for (let i = 0; i < out.length; i++) {
      for (const el of out[i].querySelectorAll('*')) if (el.shadowRoot) out.push(el.shadowRoot);
    }
    return out;
  };
  const all = (list) => {
    for (const s of list || []) {
      const hits = [];
      for (const r of roots()) {
        try { hits.push(...r.querySelectorAll(s)); } catch { break; }
      }
      if (hits.length) return hits;
    }
    return [];
  };
  const within = (el, list) => (list || []).some((s) => { try { return !!el.querySelector(s) || el.matches(s); } catch { return false; } });
  const firstLine = (el) => (el.innerText || el.textContent || '').trim().split('\n')[0].trim();
  if (op === 'input') return all(sel.fileInput)[0] || null;
  if (op === 'uploads') {
    const chips = all(sel.attachment).map((el) => ({
      name: (el.getAttribute('data-filename') || el.getAttribute('aria-label') || firstLine(el)).slice(0, 300),
      busy: within(el, sel.attachmentBusy),
    }));
    const words = (labels.attachRefused || []).map((w) => w.toLowerCase());
    const refused = [];
    for (const el of all(sel.notice)) {
      const text = (el.innerText || el.textContent || '').trim();
      if (text && words.some((w) => text.toLowerCase().includes(w)) && !refused.includes(text)) refused.push(text.slice(0, 500));
    }
    return { chips, refused };
  }
  throw new Error('aibAttach: unknown op ' + op);
}
