// Runs the subscription page's script (xscl/service/api/static/page.js) in Node against a
// real `xscl api` server, with a minimal stand-in for the DOM (no browser on this machine):
// the elements the script reads and writes, their events, sessionStorage, fetch on the
// server's origin. Prints what the page showed after each step, as JSON.
"use strict";

const [base, token, script] = process.argv.slice(2);
const realSetTimeout = setTimeout;
const settle = (ms = 250) => new Promise((resolve) => realSetTimeout(resolve, ms));

class Element {
  constructor(tag) {
    Object.assign(this, { tag, children: [], handlers: {}, textContent: "", hidden: false });
    Object.assign(this, { value: "", className: "" });
  }
  addEventListener(type, handler) { (this.handlers[type] ||= []).push(handler); }
  replaceChildren() { this.children = []; }
  append(...nodes) { this.children.push(...nodes); }
  fire(type) { for (const handler of this.handlers[type] || []) handler({ preventDefault() {} }); }
}
const elements = {};
global.document = {
  getElementById: (id) => (elements[id] ||= new Element(id)),
  createElement: (tag) => new Element(tag),
};
global.sessionStorage = { store: {}, getItem(k) { return this.store[k] ?? null; },
  setItem(k, v) { this.store[k] = v; } };
global.location = { href: base + "/" };
const realFetch = fetch;
global.fetch = (path, init) => realFetch(new URL(path, base + "/"), init);
global.alert = (message) => { shown.alerts.push(message); };
const shown = { alerts: [] };
const el = (id) => document.getElementById(id);
const listed = () => el("subscriptions").children.map((li) => li.children[0]);

(async () => {
  require(script);
  el("token").value = token;
  el("login").fire("submit");
  await settle();
  shown.signedIn = [el("who").textContent, el("main").hidden];
  el("text").value = "W1: S//a->x\n  FOLLOWED BY {x=y, 1h} S//b->";
  el("text").fire("input");
  await settle(700); // past the page's 300 ms debounce, and the answer
  shown.typedBad = [el("check").className, el("check").textContent];
  el("text").value = "W1: S//a->x FOLLOWED BY {x=y, 1h} S//b->y;";
  el("text").fire("input");
  await settle(700); // past the page's 300 ms debounce, and the answer
  shown.typedGood = [el("check").className, el("check").textContent];
  el("add").fire("submit");
  await settle();
  shown.subscribed = [el("check").textContent, listed(), el("text").value];
  el("subscriptions").children[0].children[1].fire("click"); // results
  await settle();
  shown.results = [el("results-title").textContent, el("feed").textContent];
  el("subscriptions").children[0].children[2].fire("click"); // remove
  await settle();
  shown.removed = listed();
  console.log(JSON.stringify(shown));
})();
