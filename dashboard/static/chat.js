// A conversation's page, live: redraws its tasks from /p/KEY/chat/N/events (server-sent events) and sends the
// task form with fetch, so the page never reloads. Agent text goes in with textContent: shown, never markup.
"use strict";
(function () {
  const list = document.getElementById("tasks");
  if (!list) return;
  const form = document.getElementById("chat-form");
  const errorLine = document.getElementById("chat-error");

  function add(parent, tag, text, cls) {
    const node = document.createElement(tag);
    if (text != null) node.textContent = String(text);
    if (cls) node.className = cls;
    parent.appendChild(node);
    return node;
  }

  function draw(tasks) {
    while (list.firstChild) list.removeChild(list.firstChild);
    for (const t of tasks) {
      const item = add(list, "li");
      item.dataset.task = t.id;
      add(add(item, "p", null, "task"), "q", t.task);
      const line = add(item, "p");
      add(line, "span", t.state, "state");
      if (t.exit_code !== null) line.appendChild(document.createTextNode(" (exit code " + t.exit_code + ")"));
      if (t.run_url) {
        line.appendChild(document.createTextNode(" "));
        const link = add(line, "a", t.run_id, "run");
        link.href = t.run_url;
      }
      if (t.error) {
        line.appendChild(document.createTextNode(": "));
        add(line, "span", t.error, "error");
      }
      if (t.summary) add(item, "pre", t.summary, "summary");
    }
    const none = document.getElementById("no-tasks");
    if (none && tasks.length) none.remove();
  }

  if (window.EventSource) {
    const source = new EventSource(list.dataset.events);
    source.onmessage = function (event) { draw(JSON.parse(event.data).tasks); };
  }

  if (!form || !window.fetch) return;
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const button = form.querySelector("button");
    if (button) button.disabled = true;
    if (errorLine) errorLine.textContent = "";
    fetch(form.action, {method: "POST", body: new FormData(form), credentials: "same-origin", redirect: "manual"})
      .then(function (response) {
        if (response.type === "opaqueredirect" || response.ok) {
          form.reset();
          return;
        }
        return response.text().then(function (text) { if (errorLine) errorLine.textContent = text; });
      })
      .catch(function (err) { if (errorLine) errorLine.textContent = String(err); })
      .then(function () { if (button) button.disabled = false; });
  });
})();
