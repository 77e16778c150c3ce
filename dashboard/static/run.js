// The run page, live: redraws the agent tree and log tails from /p/KEY/runs/ID/events (server-sent events) and
// sends cancel buttons with fetch, so the page never reloads. No inline script: the CSP forbids it.
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

  function drawLogs(agents) {
    if (!logs) return;
    while (logs.firstChild) logs.removeChild(logs.firstChild);
    for (const a of agents) {
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
    drawLogs(snap.agents);
    const worktree = document.getElementById("worktree-state");
    if (worktree && snap.worktree_state) worktree.textContent = snap.worktree_state;
    const active = document.getElementById("worktree-active");
    if (active && snap.worktree_state && snap.worktree_state !== "active") active.remove();
    const merge = document.getElementById("merge-result");
    if (merge && snap.merge_result) {
      merge.querySelector("q").textContent = snap.merge_result;
      merge.hidden = false;
    }
  };
  source.addEventListener("end", function () { source.close(); });
})();
