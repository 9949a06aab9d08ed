// The settings dialog: sampling fields sent with every request (an empty
// field is left out, so the model's generation_config.json decides), the
// reasoning effort, the speculative decoding the server offers, the theme.
import {keyStore, settingsStore} from "./store.js";

const NUMBER_FIELDS = {
  temperature: parseFloat, top_p: parseFloat, top_k: (v) => parseInt(v, 10),
  min_p: parseFloat, max_tokens: (v) => parseInt(v, 10), seed: (v) => parseInt(v, 10),
};
const CHOICE_FIELDS = ["reasoning_effort", "speculative"];

export class Settings {
  constructor() {
    this.values = settingsStore.load();
    this.dialog = document.getElementById("settings");
    for (const name of [...Object.keys(NUMBER_FIELDS), ...CHOICE_FIELDS, "theme"]) {
      const input = document.getElementById(`set-${name}`);
      input.value = this.values[name] ?? "";
      input.addEventListener("change", () => {
        this.values[name] = input.value;
        settingsStore.save(this.values);
        if (name === "theme") this.applyTheme();
      });
    }
    document.getElementById("open-settings").addEventListener("click", () => this.dialog.showModal());
    document.getElementById("close-settings").addEventListener("click", () => this.dialog.close());
    document.getElementById("forget-key").addEventListener("click", () => {
      keyStore.set("");
      document.getElementById("forget-key").textContent = "Key forgotten";
    });
    this.applyTheme();
  }

  // The request's sampling fields (only those set).
  requestFields() {
    const fields = {};
    for (const [name, parse] of Object.entries(NUMBER_FIELDS)) {
      const text = String(this.values[name] ?? "").trim();
      if (text === "") continue;
      const value = parse(text);
      if (!Number.isNaN(value)) fields[name] = value;
    }
    if (this.values.reasoning_effort) fields.reasoning_effort = this.values.reasoning_effort;
    if (this.values.speculative) fields.speculative = this.values.speculative;
    return fields;
  }

  // What the model entry of /v1/models says the server can speculate with.
  offerSpeculative(speculative) {
    const select = document.getElementById("set-speculative");
    const sources = (speculative && speculative.sources) || [];
    const current = this.values.speculative || "";
    select.replaceChildren();
    const label = speculative ? `server default (${speculative.default})` : "server default";
    select.append(new Option(label, ""), new Option("none", "none"));
    for (const source of sources) select.append(new Option(source, source));
    const offered = [...select.options].some((option) => option.value === current);
    select.value = offered ? current : "";
    if (!offered) this.values.speculative = "";
  }

  applyTheme() {
    const theme = this.values.theme || "auto";
    const root = document.documentElement;
    if (theme === "auto") delete root.dataset.theme;
    else root.dataset.theme = theme;
    const dark = theme === "dark" ||
        (theme === "auto" && window.matchMedia("(prefers-color-scheme: dark)").matches);
    document.getElementById("code-theme-light").media = dark ? "not all" : "all";
    document.getElementById("code-theme-dark").media = dark ? "all" : "not all";
  }
}
