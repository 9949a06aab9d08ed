// The server's public API as the page uses it: the model list, health, and
// streamed chat completions (OpenAI's SSE shape). Errors carry the server's
// own message.

export class ApiError extends Error {
  constructor(message, status = 0, kind = "server") {
    super(message);
    this.status = status;  // 0: no answer (the server is unreachable)
    this.kind = kind;      // "server", "network", "auth"
  }
}

const unreachable = () =>
  new ApiError(`Cannot reach mlx-cpp serve at ${location.origin}: the server may have stopped.`,
               0, "network");

// The message of an OpenAI-style error body, or a line that names the status.
async function errorFrom(response) {
  let message = `The server answered ${response.status} ${response.statusText}`.trim();
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch (_) { /* not JSON: keep the status line */ }
  return new ApiError(message, response.status, response.status === 401 ? "auth" : "server");
}

export class Api {
  constructor(keyStore) {
    this.keyStore = keyStore;  // {get(): string}
  }

  headers(json) {
    const headers = {};
    if (json) headers["Content-Type"] = "application/json";
    const key = this.keyStore.get();
    if (key) headers["Authorization"] = `Bearer ${key}`;
    return headers;
  }

  async fetch(path, options = {}) {
    try {
      return await fetch(path, options);
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw unreachable();
    }
  }

  // {state: "ok" | "loading" | "stopping" | "error", message}
  async health() {
    const response = await this.fetch("/health", {cache: "no-store"});
    let body = {};
    try { body = await response.json(); } catch (_) { /* keep empty */ }
    return {state: body.status || (response.ok ? "ok" : "error"), message: body.message || ""};
  }

  async model() {
    const response = await this.fetch("/v1/models", {headers: this.headers(false), cache: "no-store"});
    if (!response.ok) throw await errorFrom(response);
    const body = await response.json();
    return body.data[0];
  }

  // Streams one chat completion; onDelta(choiceDelta) for each text or
  // reasoning piece, returns {finish_reason, usage}. Aborting `signal`
  // closes the connection, which cancels the generation on the server.
  async streamChat(request, signal, onDelta) {
    const body = {...request, stream: true, stream_options: {include_usage: true}};
    const response = await this.fetch("/v1/chat/completions", {
      method: "POST", headers: this.headers(true), body: JSON.stringify(body), signal});
    if (!response.ok) throw await errorFrom(response);
    const result = {finish_reason: null, usage: null};
    await readEvents(response, signal, (event) => {
      if (event.error) throw new ApiError(event.error.message || "generation failed", 200);
      if (event.usage) result.usage = event.usage;
      for (const choice of event.choices || []) {
        if (choice.delta) onDelta(choice.delta);
        if (choice.finish_reason) result.finish_reason = choice.finish_reason;
      }
    });
    return result;
  }
}

// Server-sent events: "data: {json}" blocks separated by blank lines, ended
// by "data: [DONE]".
async function readEvents(response, signal, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (error) {
      if (signal.aborted || error.name === "AbortError") throw error;
      throw unreachable();
    }
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, {stream: true});
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((line) => line.startsWith("data:"))
                        .map((line) => line.slice(5).trimStart()).join("\n");
      if (!data) continue;
      if (data === "[DONE]") return;
      onEvent(JSON.parse(data));
    }
  }
}
