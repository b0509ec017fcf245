// Uploads in the composer, shared by both fakes (issues 20, 35). A file chosen in a file input (by a user, or by CDP
// DOM.setFileInputFiles) is checked against the page's limits (BOOT.uploadRefuse types, uploadMaxBytes,
// uploadMaxFiles, and an empty file where the site refuses those): a refused file is named (as the site names it) in
// a toast and not attached. Each accepted file gets a chip (the site's own element, made by `opts.chip`) showing a
// progress indicator (role=progressbar) while its bytes are POSTed to the site (`endpoint?name=`) and for at least
// BOOT.uploadMs; then the chip is done and holds the server's file id. Awkward on purpose, by BOOT options:
// uploadFail (name endings whose upload the site answers with an error: the chip goes, the site says so),
// uploadStall (endings whose upload never finishes: the chip keeps its progress), uploadNoChip (no chips at all: only
// the send button tells that the files are ready, as oracle met it live, #275).
// The send code asks `busy()` (no send while uploading), takes `ids()` for the message and `clear()`s after sending.
function fakeUploader(opts) {
  const { input, host, endpoint, toast, texts, onChange } = opts;
  const chips = [];
  const ends = (name, list) => (list || []).some((e) => name.toLowerCase().endsWith(e));
  const refuse = (why) => toast(why);
  const add = (file) => {
    const chip = { name: file.name, id: null, busy: true, el: null, bar: null };
    if (!BOOT.uploadNoChip) {
      const made = opts.chip(file, () => remove(chip));
      chip.el = made.el;
      chip.bar = made.bar;
      host.append(chip.el);
    }
    chips.push(chip);
    onChange();
    if (ends(file.name, BOOT.uploadStall)) return;  // never finishes
    const minDone = new Promise((r) => setTimeout(r, BOOT.uploadMs || 0));
    const sent = file.arrayBuffer().then((buf) => fetch(endpoint + '?name=' + encodeURIComponent(file.name)
      + (ends(file.name, BOOT.uploadFail) ? '&fail=1' : ''), {
      method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: buf,
    })).then((r) => { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); });
    Promise.all([sent, minDone]).then(([rec]) => {
      chip.id = rec.id;
      chip.busy = false;
      chip.bar?.remove();
      chip.el?.setAttribute('data-state', 'uploaded');
      onChange();
    }).catch(() => { remove(chip); refuse(texts.failed(file.name)); });
  };
  const remove = (chip) => {
    const i = chips.indexOf(chip);
    if (i >= 0) chips.splice(i, 1);
    chip.el?.remove();
    onChange();
  };
  const onFiles = (el) => {
    const files = Array.from(el.files || []);
    if (!BOOT.uploadNoChip) el.value = '';  // without chips the input keeps its files, as the live page did
    if (opts.refuseAll && opts.refuseAll(files)) return;  // the site's own notice says why (Gemini's quota)
    const max = BOOT.uploadMaxFiles ?? 10;
    if (chips.length + files.length > max) { refuse(texts.tooMany(max)); return; }
    for (const f of files) {
      const low = f.name.toLowerCase();
      if ((BOOT.uploadRefuse || []).some((ext) => low.endsWith(ext))) { refuse(texts.badType(f.name)); continue; }
      if (f.size > (BOOT.uploadMaxBytes ?? Infinity)) { refuse(texts.tooLarge(f.name, BOOT.uploadMaxBytes)); continue; }
      if (f.size === 0 && texts.empty) { refuse(texts.empty(f.name)); continue; }
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
    clear: () => { for (const c of chips.splice(0)) c.el?.remove(); onChange(); },
  };
}

// A plain chip: the site's element with data-filename, the name, a progress bar and a remove button.
function plainChip(tag, texts, testid) {
  return (file, onRemove) => {
    const bar = document.createElement('div');
    bar.setAttribute('role', 'progressbar');
    bar.className = 'upload-progress';
    bar.setAttribute('aria-label', texts.uploading);
    const el = document.createElement(tag);
    el.setAttribute('data-filename', file.name);
    if (testid) el.setAttribute('data-testid', testid);
    el.className = 'file-chip';
    const name = document.createElement('span');
    name.className = 'file-name';
    name.textContent = file.name;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'remove-file';
    remove.setAttribute('aria-label', texts.remove);
    remove.addEventListener('click', onRemove);
    el.append(name, bar, remove);
    return { el, bar };
  };
}

// Gemini's refusal texts are not captured (README of the captures): these are guesses in its voice.
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
