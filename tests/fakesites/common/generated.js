// Files back (issue 35): what an answer makes, as each site shows it. No capture shows these shapes; they follow the
// peers and public notes the provider tables cite, and are as awkward as those say:
// - ChatGPT (oracle src/browser/chatgptImages.ts, agbrowse web-ai/chatgpt-images.mjs): a generated image is an <img
//   alt="Generated image"> served from /backend-api/estuary/content?id=file_…, in a container id="image-…" of class
//   imagegen-image, inside the message; an image-only answer streams no text and shows no turn actions. Its code
//   sandbox's files are links to sandbox:/mnt/data/<name> in the answer's text (the script's text holds them).
// - Gemini (public notes of Feb and Aug 2026): div.attachment-container.generated-images > generated-image >
//   single-image.generated-image > img on lh3.googleusercontent.com/gg-dl/…=s1024-rj, alt "…, AI generated", and a
//   download button that shows only on a real hover (opacity 0 until then).
function chatgptGenerated(files) {
  const images = files.filter((f) => f.kind === 'image');
  if (!images.length) return null;
  return h('div', { class: 'flex flex-col gap-2 pt-2' }, ...images.map((f) => h('div', {
    id: 'image-' + f.id, class: 'imagegen-image group/imagegen-image relative max-w-md overflow-hidden rounded-lg',
  }, h('img', {
    alt: 'Generated image', class: 'w-full', draggable: 'false',
    src: 'https://chatgpt.com/backend-api/estuary/content?id=file_' + f.id + '&ts=' + Date.now() + '&p=fs&sig=fake',
  }))));
}

function geminiGenerated(files) {
  const images = files.filter((f) => f.kind === 'image');
  if (!images.length) return null;
  return h('div', { class: 'attachment-container generated-images' }, ...images.map((f) => h('generated-image', {},
    h('single-image', { class: 'generated-image large' },
      h('div', { class: 'image-container' }, h('img', {
        class: 'image loaded', alt: f.name + ', AI generated',
        src: 'https://lh3.googleusercontent.com/gg-dl/' + f.id + '=s1024-rj',
      })),
      h('div', { class: 'generated-image-controls', style: 'opacity: 0' },
        h('button', { 'data-test-id': 'download-generated-image-button', class: 'on-hover-button',
          'aria-label': 'Download full size image' }, 'download'))))));
}
