// Uploads in the composer, shared by both fakes (issue 20). A file chosen in the composer's file input (by a user, or
// by CDP DOM.setFileInputFiles) is checked against the page's limits (BOOT.uploadRefuse types, uploadMaxBytes,
// uploadMaxFiles): a refused file is named in a toast and not attached. Each accepted file gets a chip (the site's own
// element: `chipTag`, data-filename) showing a progress indicator (role=progressbar) while its bytes are POSTed to
// the site (`endpoint?name=`) and for at least BOOT.uploadMs; then the chip is done and holds the server's file id.
// The send code asks `busy()` (no send while uploading), takes `ids()` for the message and `clear()`s after sending.
function fakeUploader(opts) {
  const { input, host, endpoint, chipTag, toast, texts, onChange } = opts;
  const chips = [];
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids) if (kid != null) e.append(kid);
    return e;
  };
  const refuse = (why) => toast(why);
  const add = (file) => {
    const bar = el('div', { role: 'progressbar', class: 'upload-progress', 'aria-label': texts.uploading });
    const chip = { name: file.name, id: null, busy: true, el: null };
    chip.el = el(chipTag, { 'data-filename': file.name, 'data-testid': opts.chipTestId || null, class: 'file-chip' },
      el('span', { class: 'file-name' }, file.name), bar,
      el('button', { type: 'button', 'aria-label': texts.remove, class: 'remove-file', onclick: () => remove(chip) }));
    chips.push(chip);
    host.append(chip.el);
    onChange();
    const minDone = new Promise((r) => setTimeout(r, BOOT.uploadMs || 0));
    const sent = file.arrayBuffer().then((buf) => fetch(endpoint + '?name=' + encodeURIComponent(file.name), {
      method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: buf,
    })).then((r) => r.json());
    Promise.all([sent, minDone]).then(([rec]) => {
      chip.id = rec.id;
      chip.busy = false;
      bar.remove();
      chip.el.setAttribute('data-state', 'uploaded');
      onChange();
    }).catch(() => { remove(chip); refuse(texts.failed(file.name)); });
  };
  const remove = (chip) => {
    const i = chips.indexOf(chip);
    if (i >= 0) chips.splice(i, 1);
    chip.el.remove();
    onChange();
  };
  const onFiles = (input) => {
    const files = Array.from(input.files || []);
    input.value = '';
    const max = BOOT.uploadMaxFiles ?? 10;
    if (chips.length + files.length > max) { refuse(texts.tooMany(max)); return; }
    for (const f of files) {
      const low = f.name.toLowerCase();
      if ((BOOT.uploadRefuse || []).some((ext) => low.endsWith(ext))) { refuse(texts.badType(f.name)); continue; }
      if (f.size > (BOOT.uploadMaxBytes ?? Infinity)) { refuse(texts.tooLarge(f.name)); continue; }
      add(f);
    }
  };
  const watch = (el) => el.addEventListener('change', () => onFiles(el));
  if (input) watch(input);
  return {
    watch,  // a file input the page makes later (Gemini's, once its upload menu is used)
    busy: () => chips.some((c) => c.busy),
    count: () => chips.length,
    ids: () => chips.filter((c) => c.id).map((c) => c.id),
    clear: () => { for (const c of chips.splice(0)) c.el.remove(); onChange(); },
  };
}

const UPLOAD_TEXTS = {
  en: {
    uploading: 'Uploading', remove: 'Remove file', failed: (n) => `Failed to upload ${n}`,
    tooMany: (m) => `You can only upload ${m} files at a time`, badType: (n) => `File type not supported: ${n}`,
    tooLarge: (n) => `${n} is too large to upload`,
  },
  ja: {
    uploading: 'アップロード中', remove: 'ファイルを削除', failed: (n) => `${n} のアップロードに失敗しました`,
    tooMany: (m) => `一度にアップロードできるのは ${m} ファイルまでです`,
    badType: (n) => `サポートされていないファイル形式です: ${n}`, tooLarge: (n) => `${n} は大きすぎます`,
  },
};
