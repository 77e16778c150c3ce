// Redraws the run page's agent tree from the server-sent events of /runs/ID/events (no inline script: CSP).
"use strict";
(function () {
  const table = document.getElementById("agents");
  if (!table || !window.EventSource) return;
  const body = table.tBodies[0];
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
  const source = new EventSource(table.dataset.events);
  source.onmessage = function (event) {
    const snap = JSON.parse(event.data);
    const state = document.getElementById("run-state");
    if (state) state.textContent = snap.state;
    while (body.rows.length) body.deleteRow(0);
    for (const a of snap.agents) {
      const row = body.insertRow();
      cell(row, a.agent_id, "depth-" + Math.min(a.depth, 6));
      cell(row, a.role); cell(row, a.agent); cell(row, a.state, "state");
      cell(row, a.duration); cell(row, a.parent);
      cell(row, "").appendChild(cancelForm(a.agent_id));
    }
  };
})();
