// The home and project pages, live (no inline script: the CSP forbids it). The element #live names its event
// stream (server-sent events); each event carries parts of the page the server rendered (all text escaped
// there): `html` replaces an element's content, `hidden` shows or hides one, `items` updates a list item by
// item, so an answer being typed in a waiting question survives the next event. Durations tick every second,
// answers to waiting questions post in the background, and the runtime picker says what its default binds.
"use strict";
(function () {
  const live = document.getElementById("live");
  const errorLine = document.getElementById("action-error");

  // As dashboard/live.py's elapsed(): 42s, 3m 05s, 2h 07m.
  function elapsed(seconds) {
    const whole = Math.max(0, Math.floor(seconds));
    const pad = function (n) { return String(n).padStart(2, "0"); };
    if (whole < 60) return whole + "s";
    if (whole < 3600) return Math.floor(whole / 60) + "m " + pad(whole % 60) + "s";
    return Math.floor(whole / 3600) + "h " + pad(Math.floor(whole % 3600 / 60)) + "m";
  }
  function tick() {
    const now = Date.now() / 1000;
    for (const span of document.querySelectorAll(".elapsed[data-since]")) {
      span.textContent = elapsed(now - Number(span.dataset.since));
    }
  }
  setInterval(tick, 1000);

  function parse(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content;
  }

  function updateItems(list, items) {
    const wanted = new Set(items.map(function (item) { return item.id; }));
    for (const child of Array.from(list.children)) {
      if (!wanted.has(child.id)) child.remove();
    }
    for (const item of items) {
      if (!document.getElementById(item.id)) list.appendChild(parse(item.html));
    }
  }

  function apply(snap) {
    for (const [id, html] of Object.entries(snap.html || {})) {
      const element = document.getElementById(id);
      if (element) element.replaceChildren(parse(html));
    }
    for (const [id, hidden] of Object.entries(snap.hidden || {})) {
      const element = document.getElementById(id);
      if (element) element.hidden = hidden;
    }
    for (const [id, items] of Object.entries(snap.items || {})) {
      const list = document.getElementById(id);
      if (list) updateItems(list, items);
    }
    tick();
  }

  // A browser keeps about 6 connections per host: a page in a background tab gives its stream up, and takes
  // it again (the first event then brings the page up to date) when it is shown.
  let source = null;
  function connect() {
    if (source || document.hidden || !live || !live.dataset.events || !window.EventSource) return;
    source = new EventSource(live.dataset.events);
    source.onmessage = function (event) { apply(JSON.parse(event.data)); };
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden && source) {
      source.close();
      source = null;
    }
    connect();
  });
  connect();

  // An answer to a waiting question: POST it in the background; the feed takes the question away.
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.closest("#waiting-list") || !window.fetch) return;
    event.preventDefault();
    const data = new FormData(form);
    if (event.submitter && event.submitter.name) data.set(event.submitter.name, event.submitter.value);
    for (const button of form.querySelectorAll("button")) button.disabled = true;
    if (errorLine) errorLine.textContent = "";
    fetch(form.action, {method: "POST", body: data, credentials: "same-origin", redirect: "manual"})
      .then(function (response) {
        if (response.type === "opaqueredirect" || response.ok) return;
        return response.text().then(function (text) { throw new Error(text); });
      })
      .catch(function (err) {
        if (errorLine) errorLine.textContent = err.message || String(err);
        for (const button of form.querySelectorAll("button")) button.disabled = false;
      });
  });

  // The runtime picker's default: the agent the chosen role is bound to.
  const role = document.getElementById("start-role");
  const runtimeDefault = document.getElementById("runtime-default");
  if (role && runtimeDefault) {
    role.addEventListener("change", function () {
      const agent = role.selectedOptions[0] ? role.selectedOptions[0].dataset.agent : "";
      runtimeDefault.textContent = "default: " + (agent || "each role's binding");
    });
  }
})();
