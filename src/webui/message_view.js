// One message on the page. A user message is plain text; an answer is
// markdown (sanitised), with its reasoning collapsed above it, its tool
// calls shown as calls, its error or stop, and its numbers below.
import {renderMarkdown} from "./markdown.js";

function part(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

function button(label, onClick, title) {
  const element = part("button", "small", label);
  element.type = "button";
  if (title) element.setAttribute("aria-label", title);
  element.addEventListener("click", onClick);
  return element;
}

function wordCount(text) {
  const words = text.trim().split(/\s+/).filter(Boolean);
  return words.length;
}

// "42 tokens · 31.5 tokens/s · first token 0.21 s · 118 cached"
export function statsLine(stats) {
  if (!stats) return "";
  const pieces = [];
  if (stats.completionTokens !== undefined) pieces.push(`${stats.completionTokens} tokens`);
  if (stats.tokensPerSecond) pieces.push(`${stats.tokensPerSecond.toFixed(1)} tokens/s`);
  if (stats.firstTokenSeconds !== undefined)
    pieces.push(`first token ${stats.firstTokenSeconds.toFixed(2)} s`);
  if (stats.cachedTokens) pieces.push(`${stats.cachedTokens} prompt tokens cached`);
  if (stats.acceptedDrafts !== undefined) pieces.push(`${stats.acceptedDrafts} drafts accepted`);
  return pieces.join(" · ");
}

export class MessageView {
  // actions: {edit(index), regenerate(), copy(text)}; which appear is
  // decided by update()'s `last` flag and the role.
  constructor(message, index, actions) {
    this.index = index;
    this.actions = actions;
    this.element = part("article", `message ${message.role}`);
    this.element.dataset.index = String(index);
    this.element.append(part("div", "role", message.role === "user" ? "You" : "Model"));
    this.reasoning = part("details", "reasoning");
    this.reasoningSummary = part("summary");
    this.reasoningText = part("div", "reasoning-text");
    this.reasoning.append(this.reasoningSummary, this.reasoningText);
    this.content = part("div", message.role === "user" ? "content plain" : "content markdown");
    this.toolCalls = part("div", "tool-calls");
    this.notice = part("p", "notice");
    this.stats = part("div", "stats muted");
    this.buttons = part("div", "actions");
    this.element.append(this.reasoning, this.content, this.toolCalls, this.notice, this.stats,
                        this.buttons);
    this.rendered = {};
  }

  update(message, {last = false, streaming = false} = {}) {
    const user = message.role === "user";
    if (user) {
      this.content.textContent = message.content;
    } else if (this.rendered.content !== message.content) {
      renderMarkdown(this.content, message.content);
      this.rendered.content = message.content;
    }
    this.element.classList.toggle("streaming", streaming);
    this.updateReasoning(message.reasoning || "", streaming && !message.content);
    this.updateToolCalls(message.toolCalls || []);
    const notice = message.error || (message.stopped ? "Stopped." : "") ||
        (message.truncated ? "Cut short at the token limit (Settings → Max tokens)." : "");
    this.notice.hidden = !notice;
    this.notice.className = message.error ? "notice error" : "notice muted";
    this.notice.textContent = notice;
    this.stats.textContent = statsLine(message.stats);
    this.stats.hidden = !message.stats;
    this.updateButtons(message, last, streaming);
  }

  updateReasoning(text, thinking) {
    this.reasoning.hidden = !text;
    if (!text) return;
    this.reasoningSummary.textContent =
        `${thinking ? "Reasoning…" : "Reasoning"} (${wordCount(text)} words)`;
    if (this.rendered.reasoning !== text) {
      this.reasoningText.textContent = text;
      this.rendered.reasoning = text;
    }
  }

  updateToolCalls(calls) {
    this.toolCalls.hidden = calls.length === 0;
    this.toolCalls.replaceChildren(...calls.map((call) => {
      const box = part("div", "tool-call");
      const head = part("div", "tool-call-head");
      head.append(part("span", "muted", "Tool call "), part("code", "", call.name || "?"));
      let args = call.arguments || "";
      try { args = JSON.stringify(JSON.parse(args), null, 2); } catch (_) { /* partial: raw */ }
      box.append(head, part("pre", "", args));
      return box;
    }));
  }

  updateButtons(message, last, streaming) {
    this.buttons.replaceChildren();
    if (streaming) return;
    if (message.role === "user") {
      this.buttons.append(button("Edit", () => this.actions.edit(this.index),
                                 "Edit this message and send it again"));
    } else {
      this.buttons.append(button("Copy", () => this.actions.copy(message.content, this.buttons),
                                 "Copy the answer"));
      if (last) this.buttons.append(button("Regenerate", () => this.actions.regenerate(),
                                           "Answer this again"));
    }
  }

  // Swaps the text for an editor; resolves with the new text, or null.
  edit(message) {
    return new Promise((resolve) => {
      const editor = part("textarea", "editor");
      editor.value = message.content;
      editor.rows = Math.min(12, Math.max(2, message.content.split("\n").length));
      editor.setAttribute("aria-label", "Edit the message");
      const save = button("Send", () => finish(editor.value), "Send the edited message");
      save.classList.add("primary");
      const cancel = button("Cancel", () => finish(null), "Keep the message as it was");
      const finish = (value) => {
        this.content.hidden = false;
        editor.remove();
        resolve(value);
      };
      editor.addEventListener("keydown", (event) => {
        if (event.key === "Escape") finish(null);
        if (event.key === "Enter" && !event.shiftKey) {
          event.preventDefault();
          finish(editor.value);
        }
      });
      this.content.hidden = true;
      this.buttons.replaceChildren(save, cancel);
      this.element.insertBefore(editor, this.content);
      editor.focus();
    });
  }
}
