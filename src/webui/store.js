// Conversations, settings and the API key, kept in this browser's
// localStorage. A conversation: {id, title, system, messages, created,
// updated, contextTokens}; a message: {role, content, reasoning, toolCalls,
// stats, error, stopped}.

const CONVERSATIONS = "mlx-cpp.conversations";
const SETTINGS = "mlx-cpp.settings";
const KEY = "mlx-cpp.api-key";

function readJson(name, fallback) {
  try {
    const text = localStorage.getItem(name);
    return text === null ? fallback : JSON.parse(text);
  } catch (_) {
    return fallback;  // unreadable: start over rather than break the page
  }
}

function newId() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
}

export class ConversationStore {
  constructor() {
    const saved = readJson(CONVERSATIONS, []);
    this.items = Array.isArray(saved) ? saved.filter((c) => c && Array.isArray(c.messages)) : [];
  }

  // Most recently used first.
  list() {
    return [...this.items].sort((a, b) => b.updated - a.updated);
  }

  get(id) {
    return this.items.find((c) => c.id === id) || null;
  }

  create() {
    const now = Date.now();
    const conversation = {id: newId(), title: "", system: "", messages: [], created: now,
                          updated: now, contextTokens: 0};
    this.items.push(conversation);
    this.save();
    return conversation;
  }

  remove(id) {
    this.items = this.items.filter((c) => c.id !== id);
    this.save();
  }

  touch(conversation) {
    conversation.updated = Date.now();
    this.save();
  }

  save() {
    try {
      localStorage.setItem(CONVERSATIONS, JSON.stringify(this.items));
    } catch (error) {
      console.warn("conversations not saved:", error.message);
    }
  }
}

export function titleOf(conversation) {
  if (conversation.title) return conversation.title;
  const first = conversation.messages.find((m) => m.role === "user");
  if (!first) return "New chat";
  const text = first.content.trim().replace(/\s+/g, " ");
  return text.length > 48 ? text.slice(0, 47) + "…" : text || "New chat";
}

export function exportJson(conversations) {
  return JSON.stringify({format: "mlx-cpp-conversations", version: 1, conversations}, null, 2);
}

export const settingsStore = {
  load: () => ({theme: "auto", ...readJson(SETTINGS, {})}),
  save: (settings) => localStorage.setItem(SETTINGS, JSON.stringify(settings)),
};

export const keyStore = {
  get: () => localStorage.getItem(KEY) || "",
  set: (key) => (key ? localStorage.setItem(KEY, key) : localStorage.removeItem(KEY)),
};
