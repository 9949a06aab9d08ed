// Model output → safe DOM: markdown by marked, sanitised by DOMPurify, code
// blocks highlighted by highlight.js with a copy button. The output is
// untrusted: HTML a model writes is shown as text (never parsed as markup),
// and the sanitiser still removes what markdown itself can make dangerous
// (javascript: links); images become links, since loading one would send
// a request wherever the model pointed it.

const FORBIDDEN_TAGS = ["style", "img", "svg", "math", "form", "input", "button", "textarea",
                        "select", "iframe", "object", "embed", "video", "audio", "source",
                        "picture", "link", "meta", "base"];

let configured = false;

function configure() {
  if (configured) return;
  configured = true;
  // An image in a reply would be fetched the moment it renders (a way to
  // send the conversation to someone else's server): it becomes a link.
  window.marked.use({
    gfm: true, breaks: false, mangle: false, headerIds: false,
    renderer: {
      // Block HTML arrives with its line end, inline tags without.
      html(html) {
        return html.endsWith("\n") ? `<p>${escapeText(html)}</p>` : escapeText(html);
      },
      image(href, title, text) {
        const label = text || href || "image";
        return `<a href="${escapeAttribute(href || "")}">${escapeText(label)}</a>`;
      },
    },
  });
  window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  });
}

function escapeText(text) {
  return text.replace(/[&<>]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"})[c]);
}

function escapeAttribute(text) {
  return escapeText(text).replace(/"/g, "&quot;");
}

export function sanitizedFragment(markdown) {
  configure();
  const html = window.marked.parse(markdown);
  return window.DOMPurify.sanitize(html, {
    FORBID_TAGS: FORBIDDEN_TAGS, FORBID_ATTR: ["style", "srcset"], ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}

// Renders `markdown` into `element`, replacing what it held.
export function renderMarkdown(element, markdown) {
  const fragment = sanitizedFragment(markdown);
  for (const code of fragment.querySelectorAll("pre > code")) decorateCode(code);
  element.replaceChildren(fragment);
}

function decorateCode(code) {
  const language = [...code.classList].find((c) => c.startsWith("language-"));
  const name = language ? language.slice("language-".length) : "";
  // Only a named, known language: guessing over every grammar on each
  // streamed frame would cost more than the rest of the page.
  if (name && window.hljs && window.hljs.getLanguage(name)) window.hljs.highlightBlock(code);
  const pre = code.parentElement;
  const wrapper = document.createElement("div");
  wrapper.className = "code-block";
  const bar = document.createElement("div");
  bar.className = "code-bar";
  const label = document.createElement("span");
  label.textContent = name || "code";
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "copy";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", "Copy the code");
  copy.addEventListener("click", () => copyText(code.textContent, copy));
  bar.append(label, copy);
  pre.replaceWith(wrapper);
  wrapper.append(bar, pre);
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch (_) {
    button.textContent = "Copy failed";
  }
  setTimeout(() => { button.textContent = "Copy"; }, 1500);
}
