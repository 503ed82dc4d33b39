// The subscription page: every call goes to the API with the token the user gave
// (kept in sessionStorage). Text from the server is set with textContent only.
"use strict";

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("xscl-token") || "";

async function call(method, path, body) {
  const init = { method, headers: { Authorization: "Bearer " + token } };
  if (body !== undefined) init.body = body;
  const response = await fetch(path, init);
  const data = response.headers.get("content-type")?.startsWith("application/json")
    ? await response.json() : await response.text();
  return { ok: response.ok, status: response.status, data };
}

function where(error) {
  const first = (error.errors && error.errors[0]) || error;
  const at = first.line ? ` at line ${first.line}, column ${first.column}` : "";
  return `${first.code || error.code}${at}: ${first.message || error.message}`;
}

async function list() {
  const answer = await call("GET", "subscriptions");
  if (!answer.ok) {
    $("who").textContent = where(answer.data);
    $("main").hidden = true;
    return;
  }
  $("who").textContent = "signed in";
  $("main").hidden = false;
  const items = $("subscriptions");
  items.replaceChildren();
  for (const sub of answer.data.subscriptions) {
    const item = document.createElement("li");
    const text = document.createElement("pre");
    text.textContent = sub.text;
    const show = document.createElement("button");
    show.textContent = "results";
    show.addEventListener("click", () => results(sub.id));
    const remove = document.createElement("button");
    remove.textContent = "remove";
    remove.addEventListener("click", async () => {
      const gone = await call("DELETE", "subscriptions/" + encodeURIComponent(sub.id));
      if (!gone.ok) alert(where(gone.data));
      list();
    });
    item.append(sub.id, show, remove, text);
    items.append(item);
  }
}

async function results(id) {
  const answer = await call("GET", "subscriptions/" + encodeURIComponent(id) + "/invoke");
  $("results-title").hidden = false;
  $("results-title").textContent = `Results of ${id} in its window as of now`;
  const feed = "subscriptions/" + encodeURIComponent(id) + "/feed.atom";
  $("feed").textContent = `Atom feed (with the token): ${new URL(feed, location.href)}`;
  const items = $("results");
  items.replaceChildren();
  if (!answer.ok) {
    items.textContent = where(answer.data);
    return;
  }
  for (const record of answer.data.results.slice(-50).reverse()) {
    const item = document.createElement("li");
    const docs = (record.docs || []).map((d) => `${d.stream}/${d.docid} ${d.ts}`).join(", ");
    item.textContent = `${docs} ${JSON.stringify(record.values || {})}`;
    items.append(item);
  }
}

let pending = 0;
async function check() {
  const text = $("text").value;
  const mine = ++pending;
  if (!text.trim()) {
    $("check").textContent = "";
    return;
  }
  const answer = await call("POST", "check", text);
  if (mine !== pending) return; // the text changed meanwhile
  $("check").className = answer.ok ? "ok" : "error";
  $("check").textContent = answer.ok
    ? `ok: would subscribe ${answer.data.ids.join(", ")}` : where(answer.data);
}

let timer = 0;
$("text").addEventListener("input", () => {
  clearTimeout(timer);
  timer = setTimeout(check, 300);
});

$("add").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = await call("POST", "subscriptions", $("text").value);
  $("check").className = answer.ok ? "ok" : "error";
  $("check").textContent = answer.ok
    ? `subscribed ${answer.data.ids.join(", ")}` : where(answer.data);
  if (answer.ok) {
    $("text").value = "";
    list();
  }
});

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  token = $("token").value.trim();
  sessionStorage.setItem("xscl-token", token);
  list();
});

if (token) list();
