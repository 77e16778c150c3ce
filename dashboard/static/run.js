// The run page, live: redraws the agent tree, log tails and summary from /p/KEY/runs/ID/events (server-sent
// events), the timeline and files from /p/KEY/runs/ID/after, and sends cancel buttons with fetch, so the page
// never reloads. No inline script: the CSP forbids it.
"use strict";
(function () {
  const table = document.getElementById("agents");
  if (!table) return;
  const body = table.tBodies[0];
  const logs = document.getElementById("logs");
  const errorLine = document.getElementById("action-error");

  function cell(row, text, cls) {
    const td = row.insertCell();
    td.textContent = text == null ? "" : String(text);
    if (cls) td.className = cls;
    return td;
  }

  function cancelForm(agentId) {
    const form = document.createElement("form");
    form.method = "post";
    form.action = table.dataset.cancel;
    form.className = "cancel";
    for (const [name, value] of [["csrf", table.dataset.csrf], ["agent", agentId]]) {
      const input = document.createElement("input");
      input.type = "hidden"; input.name = name; input.value = value;
      form.appendChild(input);
    }
    const button = document.createElement("button");
    button.type = "submit"; button.textContent = "Cancel";
    form.appendChild(button);
    return form;
  }

  // Any cancel form (the run's or an agent's): POST it in the background; the feed shows what it changed.
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("cancel") || !window.fetch) return;
    event.preventDefault();
    const button = form.querySelector("button");
    if (button) button.disabled = true;
    if (errorLine) errorLine.textContent = "";
    fetch(form.action, {method: "POST", body: new FormData(form), credentials: "same-origin", redirect: "manual"})
      .then(function (response) {
        if (response.type === "opaqueredirect" || response.ok) return;
        return response.text().then(function (text) {
          if (errorLine) errorLine.textContent = text;
          if (button) button.disabled = false;
        });
      })
      .catch(function (err) {
        if (errorLine) errorLine.textContent = String(err);
        if (button) button.disabled = false;
      });
  });

  // "N more ... not shown" under the tree and the logs: the page lists a bounded number of each.
  function drawMore(id, count) {
    const line = document.getElementById(id);
    if (!line) return;
    line.querySelector("span").textContent = String(count);
    line.hidden = !count;
  }

  function drawLogs(tails) {
    if (!logs) return;
    while (logs.firstChild) logs.removeChild(logs.firstChild);
    for (const a of tails) {
      const section = document.createElement("section");
      section.dataset.agent = a.agent_id;
      const title = document.createElement("h3");
      title.textContent = a.agent_id;
      const pre = document.createElement("pre");
      pre.textContent = a.log;
      section.appendChild(title);
      section.appendChild(pre);
      logs.appendChild(section);
    }
  }

  // The summary: the main agent's final answer, recorded when the run ends.
  function drawSummary(snap) {
    const box = document.getElementById("summary");
    const none = document.getElementById("summary-none");
    if (!box || !none) return;
    if (snap.summary) {
      box.textContent = snap.summary;
      box.hidden = false;
      none.hidden = true;
    } else if (snap.state !== "running") {
      none.textContent = "The run recorded no summary: its main agent left no final answer.";
    }
  }

  // The timeline and the files: redrawn from the server's own rendering (escaped there), at most every 3 s while
  // the run goes on, and once more when it ends (its merge has then recorded the files).
  const after = document.getElementById("after-run");
  let lastDrawn = Date.now(), pending = null;
  function redrawAfter() {
    if (!after || !window.fetch) return;
    lastDrawn = Date.now();
    fetch(after.dataset.src, {credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        const open = after.querySelector("details[open]");  // keep the event list open if it was
        after.innerHTML = html;
        const details = after.querySelector("details");
        if (open && details) details.open = true;
      })
      .catch(function () { /* the next event redraws it */ });
  }
  function soon() {
    if (pending) return;
    pending = setTimeout(function () { pending = null; redrawAfter(); }, Math.max(0, 3000 - (Date.now() - lastDrawn)));
  }

  if (!window.EventSource) return;
  const source = new EventSource(table.dataset.events);
  source.onmessage = function (event) {
    const snap = JSON.parse(event.data);
    const state = document.getElementById("run-state");
    if (state) { state.textContent = snap.state; state.className = "state state-" + snap.state; }
    const cancelRun = document.getElementById("cancel-run");
    if (cancelRun && snap.state !== "running") cancelRun.remove();
    while (body.rows.length) body.deleteRow(0);
    for (const a of snap.agents) {
      const row = body.insertRow();
      row.dataset.agent = a.agent_id;
      cell(row, a.agent_id, "depth-" + Math.min(a.depth, 6));
      cell(row, a.role); cell(row, a.agent); cell(row, a.state, "state state-" + a.state);
      cell(row, a.duration); cell(row, a.parent);
      const actions = cell(row, "");
      if (a.active) actions.appendChild(cancelForm(a.agent_id));
    }
    drawLogs(snap.logs);
    drawMore("agents-more", snap.agents_left_out);
    drawMore("logs-more", snap.logs_left_out);
    const worktree = document.getElementById("worktree-state");
    if (worktree && snap.worktree_state) worktree.textContent = snap.worktree_state;
    const active = document.getElementById("worktree-active");
    if (active && snap.worktree_state && snap.worktree_state !== "active") active.remove();
    const merge = document.getElementById("merge-result");
    if (merge && snap.merge_result) {
      merge.querySelector("q").textContent = snap.merge_result;
      merge.hidden = false;
    }
    drawSummary(snap);
    if (snap.state === "running") soon();
  };
  source.addEventListener("end", function () {
    source.close();
    if (pending) { clearTimeout(pending); pending = null; }
    redrawAfter();
  });
})();
