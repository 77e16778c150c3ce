// Keeps the run page's questions current from /p/KEY/runs/ID/asks/events (no inline script: CSP). Each event
// carries every question as HTML the server rendered (all text escaped there); only changed items are
// replaced, so an answer being typed in another question's form survives.
"use strict";
(function () {
  const section = document.getElementById("asks");
  if (!section || !window.EventSource) return;
  const list = document.getElementById("asks-list");
  const none = document.getElementById("asks-none");
  const source = new EventSource(section.dataset.events);
  source.onmessage = function (event) {
    const snap = JSON.parse(event.data);
    for (const ask of snap.asks) {
      const current = document.getElementById("ask-" + ask.id);
      if (current && current.dataset.state === ask.state) continue;
      const holder = document.createElement("template");
      holder.innerHTML = ask.html;
      const fresh = holder.content.firstElementChild;
      if (current) current.replaceWith(fresh); else list.appendChild(fresh);
    }
    none.hidden = snap.asks.length > 0;
    if (snap.final) source.close();
  };
})();
