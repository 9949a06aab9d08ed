// The chat page: conversations on the left, the current one on the right,
// one answer streaming at a time. It talks to the server only through the
// public API (api.js), as any other client does.
import {Api} from "./api.js";
import {MessageView} from "./message_view.js";
import {Settings} from "./settings.js";
import {ConversationStore, exportJson, keyStore, titleOf} from "./store.js";

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Streamed tool-call fragments (OpenAI's delta.tool_calls) merged by index.
function mergeToolCalls(calls, deltas) {
  for (const delta of deltas) {
    const index = delta.index ?? calls.length;
    const call = calls[index] || (calls[index] = {id: "", name: "", arguments: ""});
    if (delta.id) call.id = delta.id;
    if (delta.function && delta.function.name) call.name += delta.function.name;
    if (delta.function && delta.function.arguments) call.arguments += delta.function.arguments;
  }
}

// The conversation as the API wants it: the system prompt first, answers
// that are only an error left out.
function requestMessages(conversation) {
  const messages = [];
  if (conversation.system.trim()) messages.push({role: "system", content: conversation.system});
  for (const message of conversation.messages) {
    if (message.role === "assistant" && !message.content && !(message.toolCalls || []).length)
      continue;
    const entry = {role: message.role, content: message.content};
    if (message.toolCalls && message.toolCalls.length)
      entry.tool_calls = message.toolCalls.map((call) => ({
        id: call.id, type: "function", function: {name: call.name, arguments: call.arguments}}));
    messages.push(entry);
  }
  return messages;
}

function download(name, text) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], {type: "application/json"}));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

class ChatPage {
  constructor() {
    this.api = new Api(keyStore);
    this.store = new ConversationStore();
    this.settings = new Settings();
    this.model = null;       // the /v1/models entry once the server is ready
    this.current = null;     // the conversation shown
    this.views = [];         // MessageView per message of the current one
    this.generation = null;  // {controller, conversation, answer}
    this.bindEvents();
    this.open(this.store.list()[0] || this.store.create());
    this.connect();
  }

  bindEvents() {
    $("composer").addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    $("input").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.generation && !document.querySelector("dialog[open]"))
        this.stop();
    });
    $("stop").addEventListener("click", () => this.stop());
    $("new-chat").addEventListener("click", () => {
      this.open(this.store.create());
      this.closeSidebar();
      $("input").focus();
    });
    $("export-all").addEventListener("click",
        () => download("mlx-cpp-conversations.json", exportJson(this.store.list())));
    $("system-prompt").addEventListener("input", () => {
      this.current.system = $("system-prompt").value;
      this.store.save();
    });
    $("open-sidebar").addEventListener("click", () => $("layout").classList.add("sidebar-open"));
    $("close-sidebar").addEventListener("click", () => this.closeSidebar());
    $("key-dialog").addEventListener("cancel", (event) => event.preventDefault());
  }

  closeSidebar() {
    $("layout").classList.remove("sidebar-open");
  }

  // ---- the server ---------------------------------------------------------

  showStatus(text, kind = "error") {
    $("status").textContent = text;
    $("status").className = kind;
    $("status").hidden = false;
  }

  hideStatus() {
    $("status").hidden = true;
  }

  // Waits for /health to say ready (the model may still be loading), then
  // reads the model's entry. Retries while the server is unreachable.
  async connect() {
    if (this.connecting) return;
    this.connecting = true;
    document.body.dataset.server = "connecting";
    for (;;) {
      try {
        const health = await this.api.health();
        if (health.state === "ok" && await this.loadModel()) break;
        if (health.state === "loading") this.showStatus("The model is loading…", "info");
        else if (health.state === "stopping") this.showStatus("The server is stopping.");
        else if (health.state === "error")
          this.showStatus(`The model failed to load: ${health.message}`);
      } catch (error) {
        this.showStatus(error.message);
      }
      document.body.dataset.server = "unavailable";
      await sleep(750);
    }
    this.connecting = false;
  }

  async loadModel() {
    try {
      this.model = await this.api.model();
    } catch (error) {
      if (error.kind !== "auth") throw error;
      await this.askKey(keyStore.get() ? "The key was not accepted." : "");
      return this.loadModel();
    }
    this.hideStatus();
    document.body.dataset.server = "ready";
    $("model-name").textContent = this.model.id;
    document.title = `${this.model.id} · mlx-cpp`;
    this.settings.offerSpeculative(this.model.speculative);
    this.showContextUsage();
    return true;
  }

  askKey(problem) {
    const dialog = $("key-dialog");
    $("key-error").textContent = problem;
    $("key-error").hidden = !problem;
    $("key-input").value = "";
    dialog.showModal();
    $("key-input").focus();
    return new Promise((resolve) => {
      const save = (event) => {
        event.preventDefault();
        const key = $("key-input").value.trim();
        if (!key) return;
        keyStore.set(key);
        dialog.close();
        $("key-form").removeEventListener("submit", save);
        resolve();
      };
      $("key-form").addEventListener("submit", save);
    });
  }

  showContextUsage() {
    const total = this.model ? this.model.context_length : 0;
    const used = this.current ? this.current.contextTokens || 0 : 0;
    $("context-usage").textContent = total ? `context: ${used} / ${total} tokens` : "";
  }

  // ---- conversations ------------------------------------------------------

  open(conversation) {
    this.current = conversation;
    $("system-prompt").value = conversation.system;
    $("system-box").open = Boolean(conversation.system);
    this.renderList();
    this.renderMessages();
    this.showContextUsage();
  }

  renderList() {
    const list = $("conversation-list");
    list.replaceChildren(...this.store.list().map((conversation) => this.listItem(conversation)));
  }

  listItem(conversation) {
    const item = document.createElement("li");
    item.dataset.id = conversation.id;
    const select = document.createElement("button");
    select.type = "button";
    select.className = "conversation";
    select.textContent = titleOf(conversation);
    if (conversation === this.current) select.setAttribute("aria-current", "true");
    select.addEventListener("click", () => {
      this.open(conversation);
      this.closeSidebar();
    });
    const tool = (label, name, action) => {
      const element = document.createElement("button");
      element.type = "button";
      element.className = `icon small ${name}`;
      element.textContent = label;
      element.setAttribute("aria-label", `${name[0].toUpperCase()}${name.slice(1)} “${titleOf(conversation)}”`);
      element.addEventListener("click", action);
      return element;
    };
    item.append(select,
                tool("✎", "rename", () => this.rename(conversation, item, select)),
                tool("⤓", "export", () => download(`conversation-${conversation.id}.json`,
                                                   exportJson([conversation]))),
                tool("✕", "delete", () => this.remove(conversation)));
    return item;
  }

  rename(conversation, item, select) {
    const input = document.createElement("input");
    input.className = "rename-input";
    input.value = titleOf(conversation);
    input.setAttribute("aria-label", "New name");
    let done = false;
    const finish = (keep) => {
      if (done) return;
      done = true;
      if (keep && input.value.trim()) conversation.title = input.value.trim();
      this.store.save();
      this.renderList();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") finish(true);
      if (event.key === "Escape") finish(false);
    });
    input.addEventListener("blur", () => finish(true));
    select.replaceWith(input);
    input.focus();
    input.select();
  }

  remove(conversation) {
    if (!confirm(`Delete “${titleOf(conversation)}”?`)) return;
    if (this.generation && this.generation.conversation === conversation) this.stop();
    this.store.remove(conversation.id);
    if (this.current === conversation) this.open(this.store.list()[0] || this.store.create());
    else this.renderList();
  }

  renderMessages() {
    const conversation = this.current;
    const streaming = this.generation && this.generation.conversation === conversation;
    const actions = {
      edit: (index) => this.edit(index),
      regenerate: () => this.regenerate(),
      copy: (text) => navigator.clipboard.writeText(text).catch(() => {}),
    };
    this.views = conversation.messages.map((message, index) => new MessageView(message, index, actions));
    const last = conversation.messages.length - 1;
    this.views.forEach((view, index) =>
        view.update(conversation.messages[index], {last: index === last,
                                                   streaming: streaming && index === last}));
    $("messages").replaceChildren(...this.views.map((view) => view.element));
    if (!conversation.messages.length) {
      const hint = document.createElement("p");
      hint.className = "empty muted";
      hint.textContent = "Ask anything. Conversations stay in this browser.";
      $("messages").append(hint);
    }
    this.scrollToEnd(true);
  }

  scrollToEnd(always = false) {
    const box = $("messages");
    const near = box.scrollHeight - box.scrollTop - box.clientHeight < 120;
    if (always || near) box.scrollTop = box.scrollHeight;
  }

  // ---- generating ---------------------------------------------------------

  send() {
    const text = $("input").value;
    if (!text.trim() || this.generation) return;
    if (!this.model) {
      this.showStatus("The server is not ready yet.");
      return;
    }
    $("input").value = "";
    this.current.messages.push({role: "user", content: text});
    this.store.touch(this.current);
    this.renderList();
    this.generate();
  }

  regenerate() {
    if (this.generation) return;
    const messages = this.current.messages;
    if (messages.length && messages[messages.length - 1].role === "assistant") messages.pop();
    this.generate();
  }

  async edit(index) {
    if (this.generation) return;  // one answer at a time (the buttons are hidden meanwhile)
    const message = this.current.messages[index];
    const text = await this.views[index].edit(message);
    if (text === null || !text.trim()) return this.renderMessages();
    message.content = text;
    this.current.messages.length = index + 1;
    this.store.touch(this.current);
    this.renderList();
    this.generate();
  }

  stop() {
    if (this.generation) this.generation.controller.abort();
  }

  setBusy(busy) {
    $("send").hidden = busy;
    $("stop").hidden = !busy;
    document.body.dataset.busy = busy ? "true" : "false";
  }

  async generate() {
    const conversation = this.current;
    const request = {model: this.model.id, messages: requestMessages(conversation),
                     ...this.settings.requestFields()};
    const answer = {role: "assistant", content: "", reasoning: "", toolCalls: []};
    conversation.messages.push(answer);
    const index = conversation.messages.length - 1;
    const controller = new AbortController();
    this.generation = {controller, conversation, answer};
    this.setBusy(true);
    this.renderMessages();
    const started = performance.now();
    let firstToken = null;
    let frame = 0;
    const redraw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        if (this.current !== conversation || !this.views[index]) return;
        this.views[index].update(answer, {last: true, streaming: true});
        this.scrollToEnd();
      });
    };
    try {
      const result = await this.api.streamChat(request, controller.signal, (delta) => {
        const reasoning = delta.reasoning_content || delta.reasoning || "";
        if (delta.content) answer.content += delta.content;
        if (reasoning) answer.reasoning += reasoning;
        if (delta.tool_calls) mergeToolCalls(answer.toolCalls, delta.tool_calls);
        if (firstToken === null && (delta.content || reasoning || delta.tool_calls))
          firstToken = performance.now();
        redraw();
      });
      answer.stats = this.statsOf(result.usage, started, firstToken, performance.now());
      if (result.usage) conversation.contextTokens = result.usage.total_tokens;
      if (result.finish_reason === "length") answer.truncated = true;
    } catch (error) {
      if (error.name === "AbortError") {
        answer.stopped = true;
        if (firstToken !== null) answer.stats = {firstTokenSeconds: (firstToken - started) / 1000};
      } else {
        answer.error = error.message;
        // A server gone or a key refused: wait for it (or ask for the key) again.
        if (error.kind === "network" || error.kind === "auth") {
          this.model = null;
          this.connect();
        }
      }
    } finally {
      cancelAnimationFrame(frame);
      this.generation = null;
      this.setBusy(false);
      this.store.touch(conversation);
      if (this.current === conversation) {
        this.renderMessages();
        this.showContextUsage();
      }
    }
  }

  statsOf(usage, started, firstToken, finished) {
    const stats = {};
    if (firstToken !== null) stats.firstTokenSeconds = (firstToken - started) / 1000;
    if (!usage) return stats;
    stats.completionTokens = usage.completion_tokens;
    stats.promptTokens = usage.prompt_tokens;
    stats.cachedTokens = (usage.prompt_tokens_details || {}).cached_tokens || 0;
    const details = usage.completion_tokens_details || {};
    if (details.accepted_prediction_tokens !== undefined)
      stats.acceptedDrafts = details.accepted_prediction_tokens;
    // Decoding speed: tokens after the first over the time they took.
    if (firstToken !== null && usage.completion_tokens > 1 && finished > firstToken)
      stats.tokensPerSecond = (usage.completion_tokens - 1) / ((finished - firstToken) / 1000);
    return stats;
  }
}

// Tests and the console can reach the page's state here.
window.mlxCpp = {page: new ChatPage(), requestMessages};
