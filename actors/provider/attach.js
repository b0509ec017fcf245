// Files (issues 20, 35), run in ai-bridge's isolated world with the table's selectors and labels as values:
//   'input'   -> the composer's file input element (returned as an object, for DOM.setFileInputFiles)
//   'accept'  -> the file input's accept list ("" when it takes any file; null when there is no input)
//   'uploads' -> {chips: [{name, busy}], refused: [text], inputNames: [name]}: the attached files' chips (a chip is
//                busy while it shows progress), the notices that refuse a file (a notice entry that carries one of the
//                refusal words, or an attachNotice element with any text: Gemini's quota notice), and the names of the
//                files the file input holds
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
  const text = (el) => (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim();
  if (op === 'input') return all(sel.fileInput)[0] || null;
  if (op === 'accept') {
    const input = all(sel.fileInput)[0];
    return input ? (input.getAttribute('accept') || '') : null;
  }
  if (op === 'uploads') {
    const chips = all(sel.attachment).map((el) => ({
      name: (el.getAttribute('data-filename') || el.getAttribute('aria-label') || firstLine(el)).slice(0, 300),
      busy: within(el, sel.attachmentBusy),
    }));
    const words = (labels.attachRefused || []).map((w) => w.toLowerCase());
    const refused = [];
    const add = (t) => { if (t && !refused.includes(t.slice(0, 500))) refused.push(t.slice(0, 500)); };
    for (const el of all(sel.notice)) {
      const t = text(el);
      if (t && words.some((w) => t.toLowerCase().includes(w))) add(t);
    }
    for (const el of all(sel.attachNotice)) add(text(el));
    const input = all(sel.fileInput)[0];
    const inputNames = input && input.files ? [...input.files].map((f) => f.name.slice(0, 300)) : [];
    return { chips, refused, inputNames };
  }
  throw new Error('aibAttach: unknown op ' + op);
}
