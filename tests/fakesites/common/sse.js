// Server-sent events as the fakes stream answers (ChatGPT's, and the three newer sites'): each `data:` block parsed
// as JSON, `[DONE]` as {type: 'done'}. Bundled before the apps that read a stream.

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (!data) continue;
      onEvent(data === '[DONE]' ? { type: 'done' } : JSON.parse(data));
    }
  }
}
